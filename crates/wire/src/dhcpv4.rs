//! DHCPv4 (RFC 2131) messages and the options (RFC 2132) an ISP's server for a home gateway
//! needs: message type (53), subnet mask (1), routers (3), DNS servers (6), host name (12),
//! requested address (50), lease time (51), server identifier (54), parameter request list
//! (55), message (56), renewal and rebinding times (58/59) and client identifier (61). Every
//! other option is kept in order, undecoded ([`OtherOptions`]), so a message read and written
//! again loses nothing a server must echo.
//!
//! The fixed BOOTP part is a view ([`Dhcpv4Packet`]); the options follow the magic cookie as
//! `(code, length, value)` with PAD (0) and END (255) single bytes, iterated by
//! [`Dhcpv4Options`]. [`Dhcpv4Repr`] borrows its variable-length values from the buffer it
//! was parsed from, so nothing allocates. Not handled, on purpose: option overload (52, options
//! inside `sname`/`file`) and RFC 3396 long options split over several instances (the first
//! instance counts) — neither is used by home gateways' clients for these options.

use crate::bytes::Fields;
use core::net::Ipv4Addr;
use core::ops::Range;

use crate::error::{Error, Result};
use crate::ethernet::MacAddr;

/// The server's and the client's UDP ports (RFC 2131 §4.1).
pub const SERVER_PORT: u16 = 67;
pub const CLIENT_PORT: u16 = 68;

/// The four bytes in front of the options (RFC 2131 §3, 99.130.83.99).
pub const MAGIC_COOKIE: [u8; 4] = [99, 130, 83, 99];

/// The fixed BOOTP fields, up to and including `file`.
pub const BOOTP_LEN: usize = 236;
/// Where the options start: after the fixed fields and the magic cookie.
pub const OPTIONS_AT: usize = BOOTP_LEN + 4;
/// The smallest message BOOTP relays and old clients accept (RFC 1542 §2.1, the 64-byte
/// vendor area of RFC 951): [`Dhcpv4Repr::emit`] pads up to it.
pub const MIN_MESSAGE_LEN: usize = 300;

/// The broadcast bit of `flags` (RFC 2131 §2): the client cannot receive unicast before it
/// has its address configured.
pub const FLAG_BROADCAST: u16 = 0x8000;

/// `op`: BOOTREQUEST from a client, BOOTREPLY from a server.
pub mod op {
    pub const REQUEST: u8 = 1;
    pub const REPLY: u8 = 2;
}

/// Option codes (RFC 2132).
pub mod opt {
    pub const PAD: u8 = 0;
    pub const SUBNET_MASK: u8 = 1;
    pub const ROUTER: u8 = 3;
    pub const DNS_SERVERS: u8 = 6;
    pub const HOST_NAME: u8 = 12;
    pub const REQUESTED_IP: u8 = 50;
    pub const LEASE_TIME: u8 = 51;
    pub const OVERLOAD: u8 = 52;
    pub const MESSAGE_TYPE: u8 = 53;
    pub const SERVER_ID: u8 = 54;
    pub const PARAMETER_REQUEST: u8 = 55;
    pub const MESSAGE: u8 = 56;
    pub const MAX_MESSAGE_SIZE: u8 = 57;
    pub const RENEWAL_TIME: u8 = 58;
    pub const REBINDING_TIME: u8 = 59;
    pub const CLIENT_ID: u8 = 61;
    pub const END: u8 = 255;
}

/// The options [`Dhcpv4Repr`] decodes into fields; [`OtherOptions`] holds the rest.
const KNOWN: [u8; 14] = [
    opt::SUBNET_MASK,
    opt::ROUTER,
    opt::DNS_SERVERS,
    opt::HOST_NAME,
    opt::REQUESTED_IP,
    opt::LEASE_TIME,
    opt::MESSAGE_TYPE,
    opt::SERVER_ID,
    opt::PARAMETER_REQUEST,
    opt::MESSAGE,
    opt::RENEWAL_TIME,
    opt::REBINDING_TIME,
    opt::CLIENT_ID,
    opt::PAD,
];

fn is_known(code: u8) -> bool {
    code == opt::END || KNOWN.contains(&code)
}

/// DHCP message types (option 53, RFC 2132 §9.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageType {
    Discover,
    Offer,
    Request,
    Decline,
    Ack,
    Nak,
    Release,
    Inform,
}

impl MessageType {
    pub fn from_u8(v: u8) -> Option<MessageType> {
        Some(match v {
            1 => MessageType::Discover,
            2 => MessageType::Offer,
            3 => MessageType::Request,
            4 => MessageType::Decline,
            5 => MessageType::Ack,
            6 => MessageType::Nak,
            7 => MessageType::Release,
            8 => MessageType::Inform,
            _ => return None,
        })
    }

    pub fn to_u8(self) -> u8 {
        match self {
            MessageType::Discover => 1,
            MessageType::Offer => 2,
            MessageType::Request => 3,
            MessageType::Decline => 4,
            MessageType::Ack => 5,
            MessageType::Nak => 6,
            MessageType::Release => 7,
            MessageType::Inform => 8,
        }
    }
}

mod field {
    use super::*;
    pub const OP: usize = 0;
    pub const HTYPE: usize = 1;
    pub const HLEN: usize = 2;
    pub const HOPS: usize = 3;
    pub const XID: Range<usize> = 4..8;
    pub const SECS: Range<usize> = 8..10;
    pub const FLAGS: Range<usize> = 10..12;
    pub const CIADDR: Range<usize> = 12..16;
    pub const YIADDR: Range<usize> = 16..20;
    pub const SIADDR: Range<usize> = 20..24;
    pub const GIADDR: Range<usize> = 24..28;
    pub const CHADDR: Range<usize> = 28..44;
    pub const SNAME: Range<usize> = 44..108;
    pub const FILE: Range<usize> = 108..236;
    pub const COOKIE: Range<usize> = 236..240;
}

/// Hardware type Ethernet (RFC 1700), the only one a home gateway's WAN uses.
pub const HTYPE_ETHERNET: u8 = 1;

/// A view of a DHCPv4 message (the UDP payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dhcpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn addr_at(b: &[u8], f: Range<usize>) -> Ipv4Addr {
    Ipv4Addr::from(b.u32_at(f))
}

impl<T: AsRef<[u8]>> Dhcpv4Packet<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Dhcpv4Packet { buffer }
    }

    /// Checks that the fixed fields and the magic cookie are there: a BOOTP message without
    /// the DHCP cookie is refused.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        let b = p.buffer.as_ref();
        if b.len() < OPTIONS_AT {
            return Err(Error::Truncated);
        }
        if b[field::COOKIE] != MAGIC_COOKIE {
            return Err(Error::Malformed("dhcp magic cookie"));
        }
        Ok(p)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn op(&self) -> u8 {
        self.buffer.as_ref()[field::OP]
    }

    pub fn htype(&self) -> u8 {
        self.buffer.as_ref()[field::HTYPE]
    }

    pub fn hlen(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    pub fn hops(&self) -> u8 {
        self.buffer.as_ref()[field::HOPS]
    }

    pub fn xid(&self) -> u32 {
        self.buffer.u32_at(field::XID)
    }

    pub fn secs(&self) -> u16 {
        self.buffer.u16_at(field::SECS)
    }

    pub fn flags(&self) -> u16 {
        self.buffer.u16_at(field::FLAGS)
    }

    /// The client's address when it has one (RENEWING, REBINDING, RELEASE, INFORM).
    pub fn ciaddr(&self) -> Ipv4Addr {
        addr_at(self.buffer.as_ref(), field::CIADDR)
    }

    /// "Your" address: what the server gives.
    pub fn yiaddr(&self) -> Ipv4Addr {
        addr_at(self.buffer.as_ref(), field::YIADDR)
    }

    pub fn siaddr(&self) -> Ipv4Addr {
        addr_at(self.buffer.as_ref(), field::SIADDR)
    }

    /// The relay agent's address (0.0.0.0 when the client is on our link).
    pub fn giaddr(&self) -> Ipv4Addr {
        addr_at(self.buffer.as_ref(), field::GIADDR)
    }

    /// The 16-byte client hardware address field.
    pub fn chaddr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::CHADDR]
    }

    /// The client's MAC (the first six bytes of `chaddr`).
    pub fn client_mac(&self) -> MacAddr {
        let mut m = [0u8; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::CHADDR][..6]);
        MacAddr(m)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Dhcpv4Packet<&'a T> {
    /// The options after the magic cookie.
    pub fn options(&self) -> Dhcpv4Options<'a> {
        Dhcpv4Options::new(&self.buffer.as_ref()[OPTIONS_AT..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Dhcpv4Packet<T> {
    fn put_addr(&mut self, f: Range<usize>, a: Ipv4Addr) {
        self.buffer.as_mut()[f].copy_from_slice(&a.octets());
    }

    pub fn set_op(&mut self, v: u8) {
        self.buffer.as_mut()[field::OP] = v;
    }

    /// Ethernet: hardware type 1, length 6, no hops.
    pub fn set_ethernet(&mut self) {
        let b = self.buffer.as_mut();
        b[field::HTYPE] = HTYPE_ETHERNET;
        b[field::HLEN] = 6;
        b[field::HOPS] = 0;
    }

    pub fn set_xid(&mut self, v: u32) {
        self.buffer.as_mut()[field::XID].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_secs(&mut self, v: u16) {
        self.buffer.as_mut()[field::SECS].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_flags(&mut self, v: u16) {
        self.buffer.as_mut()[field::FLAGS].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_ciaddr(&mut self, a: Ipv4Addr) {
        self.put_addr(field::CIADDR, a);
    }

    pub fn set_yiaddr(&mut self, a: Ipv4Addr) {
        self.put_addr(field::YIADDR, a);
    }

    pub fn set_siaddr(&mut self, a: Ipv4Addr) {
        self.put_addr(field::SIADDR, a);
    }

    pub fn set_giaddr(&mut self, a: Ipv4Addr) {
        self.put_addr(field::GIADDR, a);
    }

    /// `chaddr` = the MAC and ten zero bytes.
    pub fn set_client_mac(&mut self, mac: MacAddr) {
        let c = &mut self.buffer.as_mut()[field::CHADDR];
        c.fill(0);
        c[..6].copy_from_slice(&mac.0);
    }

    /// Zeroes `sname` and `file` and writes the magic cookie.
    pub fn clear_names_and_cookie(&mut self) {
        let b = self.buffer.as_mut();
        b[field::SNAME].fill(0);
        b[field::FILE].fill(0);
        b[field::COOKIE].copy_from_slice(&MAGIC_COOKIE);
    }
}

/// `(code, value)` of each option: PAD is skipped, END ends the iteration (what follows it is
/// padding). An option whose length byte or value runs past the buffer yields one error and
/// stops; so does a buffer that ends without END (RFC 2131 §4.1 requires it).
#[derive(Debug, Clone)]
pub struct Dhcpv4Options<'a> {
    rest: &'a [u8],
    /// Whether an END must be met (the options area of a message) or the run may simply end
    /// (a list of options built without one, [`OtherOptions::new`]).
    needs_end: bool,
}

impl<'a> Dhcpv4Options<'a> {
    pub fn new(bytes: &'a [u8]) -> Dhcpv4Options<'a> {
        Dhcpv4Options {
            rest: bytes,
            needs_end: true,
        }
    }

    /// The value of the first option `code`; an error if the options break before it.
    pub fn find(self, code: u8) -> Result<Option<&'a [u8]>> {
        for o in self {
            let (c, v) = o?;
            if c == code {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for Dhcpv4Options<'a> {
    type Item = Result<(u8, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some((&code, after)) = self.rest.split_first() else {
                return if std::mem::take(&mut self.needs_end) {
                    Some(Err(Error::Malformed("dhcp options without END")))
                } else {
                    None
                };
            };
            match code {
                opt::PAD => self.rest = after,
                opt::END => {
                    self.rest = &[];
                    self.needs_end = false;
                    return None;
                }
                _ => {
                    let Some((&len, after)) = after.split_first() else {
                        self.rest = &[];
                        self.needs_end = false;
                        return Some(Err(Error::Malformed("dhcp option length missing")));
                    };
                    let Some(value) = after.get(..usize::from(len)) else {
                        self.rest = &[];
                        self.needs_end = false;
                        return Some(Err(Error::Malformed("dhcp option overruns the message")));
                    };
                    self.rest = &after[usize::from(len)..];
                    return Some(Ok((code, value)));
                }
            }
        }
    }
}

/// A list of IPv4 addresses in an option's value (routers, DNS servers): four bytes each,
/// at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4List<'a>(&'a [u8]);

impl<'a> Ipv4List<'a> {
    /// Refuses an empty value or one that is not a multiple of four bytes.
    pub fn new(bytes: &'a [u8]) -> Result<Ipv4List<'a>> {
        if bytes.is_empty() || bytes.len() & 3 != 0 {
            return Err(Error::Malformed("dhcp address list length"));
        }
        Ok(Ipv4List(bytes))
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    pub fn iter(&self) -> impl Iterator<Item = Ipv4Addr> + 'a {
        self.0
            .chunks_exact(4)
            .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]))
    }
}

/// The options of a message that [`Dhcpv4Repr`] does not decode, in their order: vendor
/// class, maximum message size, client FQDN, … Built from a message's options area (the
/// decoded ones are skipped when iterating) or from a run of options without END.
#[derive(Debug, Clone, Copy)]
pub struct OtherOptions<'a> {
    raw: &'a [u8],
    needs_end: bool,
}

impl<'a> OtherOptions<'a> {
    /// Options given as `code, length, value` triples (no END needed).
    pub fn new(raw: &'a [u8]) -> OtherOptions<'a> {
        OtherOptions {
            raw,
            needs_end: false,
        }
    }

    pub const fn none() -> OtherOptions<'static> {
        OtherOptions {
            raw: &[],
            needs_end: false,
        }
    }

    /// The undecoded options, in order (a broken option ends the run).
    pub fn iter(&self) -> impl Iterator<Item = (u8, &'a [u8])> + 'a {
        let mut it = Dhcpv4Options::new(self.raw);
        it.needs_end = self.needs_end;
        it.map_while(|o| o.ok()).filter(|(c, _)| !is_known(*c))
    }
}

impl PartialEq for OtherOptions<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for OtherOptions<'_> {}

/// A DHCPv4 message: the fixed fields a server looks at and the decoded options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dhcpv4Repr<'a> {
    /// [`op::REQUEST`] or [`op::REPLY`].
    pub op: u8,
    pub xid: u32,
    pub secs: u16,
    /// The broadcast flag (RFC 2131 §4.1): the reply must be broadcast.
    pub broadcast: bool,
    pub ciaddr: Ipv4Addr,
    pub yiaddr: Ipv4Addr,
    pub siaddr: Ipv4Addr,
    pub giaddr: Ipv4Addr,
    pub client_mac: MacAddr,
    /// Option 53; `None` for plain BOOTP.
    pub message_type: Option<MessageType>,
    pub subnet_mask: Option<Ipv4Addr>,
    pub routers: Option<Ipv4List<'a>>,
    pub dns_servers: Option<Ipv4List<'a>>,
    pub host_name: Option<&'a [u8]>,
    pub requested_ip: Option<Ipv4Addr>,
    /// Seconds (option 51; 0xffffffff is infinite).
    pub lease_time: Option<u32>,
    pub server_id: Option<Ipv4Addr>,
    pub parameter_request_list: Option<&'a [u8]>,
    /// Option 56: why a NAK was sent (or a client's DECLINE).
    pub message: Option<&'a [u8]>,
    /// T1 and T2 (options 58, 59), seconds.
    pub renewal_time: Option<u32>,
    pub rebinding_time: Option<u32>,
    /// Option 61: type byte + identifier; the lease key when present (RFC 2131 §4.2).
    pub client_id: Option<&'a [u8]>,
    pub other: OtherOptions<'a>,
}

fn one_addr(v: &[u8], what: &'static str) -> Result<Ipv4Addr> {
    match v {
        [a, b, c, d] => Ok(Ipv4Addr::new(*a, *b, *c, *d)),
        _ => Err(Error::Malformed(what)),
    }
}

fn one_u32(v: &[u8], what: &'static str) -> Result<u32> {
    match v {
        [a, b, c, d] => Ok(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => Err(Error::Malformed(what)),
    }
}

fn at_least(v: &[u8], n: usize, what: &'static str) -> Result<()> {
    if v.len() < n {
        Err(Error::Malformed(what))
    } else {
        Ok(())
    }
}

impl<'a> Dhcpv4Repr<'a> {
    /// An empty message of `op` (every address 0.0.0.0, no options) to fill in.
    pub fn new(op: u8, xid: u32, client_mac: MacAddr) -> Dhcpv4Repr<'static> {
        Dhcpv4Repr {
            op,
            xid,
            secs: 0,
            broadcast: false,
            ciaddr: Ipv4Addr::UNSPECIFIED,
            yiaddr: Ipv4Addr::UNSPECIFIED,
            siaddr: Ipv4Addr::UNSPECIFIED,
            giaddr: Ipv4Addr::UNSPECIFIED,
            client_mac,
            message_type: None,
            subnet_mask: None,
            routers: None,
            dns_servers: None,
            host_name: None,
            requested_ip: None,
            lease_time: None,
            server_id: None,
            parameter_request_list: None,
            message: None,
            renewal_time: None,
            rebinding_time: None,
            client_id: None,
            other: OtherOptions::none(),
        }
    }

    /// Reads a message whose hardware is Ethernet; a known option with a value of the wrong
    /// size is refused, the first of a repeated option counts, unknown ones go to `other`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Dhcpv4Packet<&'a T>) -> Result<Dhcpv4Repr<'a>> {
        if !matches!(p.op(), op::REQUEST | op::REPLY) {
            return Err(Error::Malformed("bootp op"));
        }
        if p.htype() != HTYPE_ETHERNET || p.hlen() != 6 {
            return Err(Error::Unsupported("dhcp hardware type other than ethernet"));
        }
        let options = &p.buffer.as_ref()[OPTIONS_AT..];
        let mut r = Dhcpv4Repr::new(p.op(), p.xid(), p.client_mac());
        r.secs = p.secs();
        r.broadcast = p.flags() & FLAG_BROADCAST != 0;
        r.ciaddr = p.ciaddr();
        r.yiaddr = p.yiaddr();
        r.siaddr = p.siaddr();
        r.giaddr = p.giaddr();
        r.other = OtherOptions {
            raw: options,
            needs_end: true,
        };
        for o in Dhcpv4Options::new(options) {
            let (code, v) = o?;
            match code {
                opt::MESSAGE_TYPE if r.message_type.is_none() => {
                    let [t] = v else {
                        return Err(Error::Malformed("dhcp message type length"));
                    };
                    r.message_type = Some(
                        MessageType::from_u8(*t).ok_or(Error::Malformed("dhcp message type"))?,
                    );
                }
                opt::SUBNET_MASK if r.subnet_mask.is_none() => {
                    r.subnet_mask = Some(one_addr(v, "dhcp subnet mask length")?)
                }
                opt::ROUTER if r.routers.is_none() => r.routers = Some(Ipv4List::new(v)?),
                opt::DNS_SERVERS if r.dns_servers.is_none() => {
                    r.dns_servers = Some(Ipv4List::new(v)?)
                }
                opt::HOST_NAME if r.host_name.is_none() => {
                    at_least(v, 1, "dhcp host name empty")?;
                    r.host_name = Some(v);
                }
                opt::REQUESTED_IP if r.requested_ip.is_none() => {
                    r.requested_ip = Some(one_addr(v, "dhcp requested address length")?)
                }
                opt::LEASE_TIME if r.lease_time.is_none() => {
                    r.lease_time = Some(one_u32(v, "dhcp lease time length")?)
                }
                opt::SERVER_ID if r.server_id.is_none() => {
                    r.server_id = Some(one_addr(v, "dhcp server identifier length")?)
                }
                opt::PARAMETER_REQUEST if r.parameter_request_list.is_none() => {
                    at_least(v, 1, "dhcp parameter request list empty")?;
                    r.parameter_request_list = Some(v);
                }
                opt::MESSAGE if r.message.is_none() => {
                    at_least(v, 1, "dhcp message empty")?;
                    r.message = Some(v);
                }
                opt::RENEWAL_TIME if r.renewal_time.is_none() => {
                    r.renewal_time = Some(one_u32(v, "dhcp renewal time length")?)
                }
                opt::REBINDING_TIME if r.rebinding_time.is_none() => {
                    r.rebinding_time = Some(one_u32(v, "dhcp rebinding time length")?)
                }
                opt::CLIENT_ID if r.client_id.is_none() => {
                    at_least(v, 2, "dhcp client identifier shorter than 2")?;
                    r.client_id = Some(v);
                }
                _ => {}
            }
        }
        Ok(r)
    }

    /// Whether the client asked for option `code` in its parameter request list.
    pub fn requests(&self, code: u8) -> bool {
        self.parameter_request_list
            .is_some_and(|l| l.contains(&code))
    }

    /// Calls `f` with each option as `(code, value)`, in the order they are written: the
    /// message type first (RFC 2131 §4.1 asks servers to expect it anywhere, clients put it
    /// first), then the server's, then the client's, then the undecoded ones.
    fn each_option(&self, f: &mut dyn FnMut(u8, &[u8]) -> Result<()>) -> Result<()> {
        if let Some(t) = self.message_type {
            f(opt::MESSAGE_TYPE, &[t.to_u8()])?;
        }
        if let Some(a) = self.server_id {
            f(opt::SERVER_ID, &a.octets())?;
        }
        if let Some(t) = self.lease_time {
            f(opt::LEASE_TIME, &t.to_be_bytes())?;
        }
        if let Some(t) = self.renewal_time {
            f(opt::RENEWAL_TIME, &t.to_be_bytes())?;
        }
        if let Some(t) = self.rebinding_time {
            f(opt::REBINDING_TIME, &t.to_be_bytes())?;
        }
        if let Some(a) = self.subnet_mask {
            f(opt::SUBNET_MASK, &a.octets())?;
        }
        if let Some(l) = self.routers {
            f(opt::ROUTER, l.as_bytes())?;
        }
        if let Some(l) = self.dns_servers {
            f(opt::DNS_SERVERS, l.as_bytes())?;
        }
        if let Some(a) = self.requested_ip {
            f(opt::REQUESTED_IP, &a.octets())?;
        }
        if let Some(v) = self.host_name {
            f(opt::HOST_NAME, v)?;
        }
        if let Some(v) = self.parameter_request_list {
            f(opt::PARAMETER_REQUEST, v)?;
        }
        if let Some(v) = self.message {
            f(opt::MESSAGE, v)?;
        }
        if let Some(v) = self.client_id {
            f(opt::CLIENT_ID, v)?;
        }
        for (c, v) in self.other.iter() {
            f(c, v)?;
        }
        Ok(())
    }

    /// The message's length: fixed fields, cookie, options and END, padded to
    /// [`MIN_MESSAGE_LEN`].
    pub fn buffer_len(&self) -> usize {
        let mut n = OPTIONS_AT + 1;
        let _ = self.each_option(&mut |_, v| {
            n += 2 + v.len();
            Ok(())
        });
        n.max(MIN_MESSAGE_LEN)
    }

    /// Writes the whole message (every byte of `buffer_len()`; PAD after END). Refuses
    /// option values above 255 bytes and empty values the format forbids.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Dhcpv4Packet<T>) -> Result<()> {
        let len = self.buffer_len();
        if p.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        for (v, n, what) in [
            (self.host_name, 1, "dhcp host name empty"),
            (
                self.parameter_request_list,
                1,
                "dhcp parameter request list empty",
            ),
            (self.message, 1, "dhcp message empty"),
            (self.client_id, 2, "dhcp client identifier shorter than 2"),
        ] {
            if let Some(v) = v {
                at_least(v, n, what)?;
            }
        }
        p.set_op(self.op);
        p.set_ethernet();
        p.set_xid(self.xid);
        p.set_secs(self.secs);
        p.set_flags(if self.broadcast { FLAG_BROADCAST } else { 0 });
        p.set_ciaddr(self.ciaddr);
        p.set_yiaddr(self.yiaddr);
        p.set_siaddr(self.siaddr);
        p.set_giaddr(self.giaddr);
        p.set_client_mac(self.client_mac);
        p.clear_names_and_cookie();
        let b = &mut p.buffer.as_mut()[..len];
        let mut at = OPTIONS_AT;
        self.each_option(&mut |code, v| {
            let n = u8::try_from(v.len())
                .map_err(|_| Error::Malformed("dhcp option above 255 bytes"))?;
            b[at] = code;
            b[at + 1] = n;
            b[at + 2..at + 2 + v.len()].copy_from_slice(v);
            at += 2 + v.len();
            Ok(())
        })?;
        b[at] = opt::END;
        b[at + 1..].fill(opt::PAD);
        Ok(())
    }
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

    /// dhcpcd 9.4.1's DISCOVER as Debian 12's dhcpcd sent it on a veth (captured with
    /// tcpdump, read with tshark): xid 0xa480ea77, MAC 0e:2a:5f:32:0c:af, options 53
    /// (Discover), 55 (1 3 6 12 28 33 51 58 59), 57 (1472), 60 (vendor class, 54 bytes), 12
    /// ("wr-cpe"), 145 (forcerenew nonce), END.
    const DHCPCD_DISCOVER: &str = concat!(
        "01010600a480ea7700000000000000000000000000000000000000000e2a5f320caf000000000000",
        "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "00000000000000000000000000000000000000000000000000000000000000000000000063825363",
        "35010137090103060c1c21333a3b390205c03c366468637063642d392e342e313a4c696e75782d36",
        "2e31382e34342d66632d763635373a7838365f36343a47656e75696e65496e74656c0c0677722d63",
        "7065910101ff",
    );

    #[test]
    fn dhcpcd_discover_parses() {
        let b = unhex(DHCPCD_DISCOVER);
        let p = Dhcpv4Packet::new_checked(&b[..]).unwrap();
        let r = Dhcpv4Repr::parse(&p).unwrap();
        assert_eq!(r.op, op::REQUEST);
        assert_eq!(r.xid, 0xa480_ea77);
        assert!(!r.broadcast);
        assert_eq!(r.client_mac, MacAddr([0x0e, 0x2a, 0x5f, 0x32, 0x0c, 0xaf]));
        assert_eq!(r.message_type, Some(MessageType::Discover));
        assert_eq!(
            r.parameter_request_list,
            Some(&[1u8, 3, 6, 12, 28, 33, 51, 58, 59][..])
        );
        assert!(r.requests(opt::DNS_SERVERS) && !r.requests(opt::CLIENT_ID));
        assert_eq!(r.host_name, Some(&b"wr-cpe"[..]));
        assert_eq!(
            (r.ciaddr, r.requested_ip, r.client_id),
            (Ipv4Addr::UNSPECIFIED, None, None)
        );
        let other: Vec<(u8, usize)> = r.other.iter().map(|(c, v)| (c, v.len())).collect();
        assert_eq!(
            other,
            [(57, 2), (60, 54), (145, 1)],
            "unknown options kept in order"
        );
        assert!(r
            .other
            .iter()
            .any(|(c, v)| c == 60 && v.starts_with(b"dhcpcd-9.4.1")));
        // Written again (options in our order, unknown ones after the decoded ones) it reads
        // back the same, and is as long: it already ends past 300 bytes, so no padding.
        assert_eq!(r.buffer_len(), b.len());
        let mut out = vec![0xa5; r.buffer_len()];
        r.emit(&mut Dhcpv4Packet::new_unchecked(&mut out[..]))
            .unwrap();
        let again = Dhcpv4Repr::parse(&Dhcpv4Packet::new_checked(&out[..]).unwrap()).unwrap();
        assert_eq!(again, r);
    }

    // An ACK for that client, written out by hand from RFC 2131 §4.3.1 / RFC 2132: xid
    // 0xa480ea77, yiaddr 198.51.100.10, siaddr 0, flags 0, chaddr, cookie; options 53 (ACK),
    // 54 (198.51.100.1), 51 (3600), 58 (1800), 59 (3150), 1 (255.255.255.0),
    // 3 (198.51.100.1), 6 (203.0.113.53), END, then PAD up to 300 bytes.
    fn ack_bytes() -> Vec<u8> {
        let mut b = vec![0u8; 300];
        b[..4].copy_from_slice(&[2, 1, 6, 0]);
        b[4..8].copy_from_slice(&[0xa4, 0x80, 0xea, 0x77]);
        b[16..20].copy_from_slice(&[198, 51, 100, 10]);
        b[28..34].copy_from_slice(&[0x0e, 0x2a, 0x5f, 0x32, 0x0c, 0xaf]);
        b[236..240].copy_from_slice(&[99, 130, 83, 99]);
        let opts: &[u8] = &[
            53, 1, 5, //
            54, 4, 198, 51, 100, 1, //
            51, 4, 0, 0, 0x0e, 0x10, //
            58, 4, 0, 0, 0x07, 0x08, //
            59, 4, 0, 0, 0x0c, 0x4e, //
            1, 4, 255, 255, 255, 0, //
            3, 4, 198, 51, 100, 1, //
            6, 4, 203, 0, 113, 53, //
            255,
        ];
        b[240..240 + opts.len()].copy_from_slice(opts);
        b
    }

    fn ack_repr() -> Dhcpv4Repr<'static> {
        let mut r = Dhcpv4Repr::new(
            op::REPLY,
            0xa480_ea77,
            MacAddr([0x0e, 0x2a, 0x5f, 0x32, 0x0c, 0xaf]),
        );
        r.yiaddr = Ipv4Addr::new(198, 51, 100, 10);
        r.message_type = Some(MessageType::Ack);
        r.server_id = Some(Ipv4Addr::new(198, 51, 100, 1));
        r.lease_time = Some(3600);
        r.renewal_time = Some(1800);
        r.rebinding_time = Some(3150);
        r.subnet_mask = Some(Ipv4Addr::new(255, 255, 255, 0));
        r.routers = Some(Ipv4List::new(&[198, 51, 100, 1]).unwrap());
        r.dns_servers = Some(Ipv4List::new(&[203, 0, 113, 53]).unwrap());
        r
    }

    #[test]
    fn ack_emits_byte_exact_and_parses_back() {
        let r = ack_repr();
        assert_eq!(r.buffer_len(), 300);
        let mut b = vec![0xa5; 300];
        r.emit(&mut Dhcpv4Packet::new_unchecked(&mut b[..]))
            .unwrap();
        assert_eq!(b, ack_bytes());
        let p = Dhcpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Dhcpv4Repr::parse(&p).unwrap(), r);
        assert_eq!(
            p.options().find(opt::DNS_SERVERS),
            Ok(Some(&[203u8, 0, 113, 53][..]))
        );
        let mut short = vec![0u8; 299];
        assert_eq!(
            r.emit(&mut Dhcpv4Packet::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn options_with_unknown_codes_and_broken_framing() {
        // PAD, an unknown option 150, END, then garbage after END (padding, ignored).
        let run = [0u8, 150, 2, 1, 2, 255, 77, 3];
        let o: Vec<_> = Dhcpv4Options::new(&run).collect();
        assert_eq!(o, [Ok((150u8, &[1u8, 2][..]))]);
        // A value past the end, a code without length, no END: one error each, then nothing.
        for bad in [&[3u8, 8, 1, 2][..], &[3u8][..], &[53u8, 1, 1][..]] {
            let mut it = Dhcpv4Options::new(bad);
            let mut errs = 0;
            for x in it.by_ref() {
                errs += usize::from(x.is_err());
            }
            assert_eq!(errs, 1, "{bad:?}");
            assert!(it.next().is_none());
        }
        let o = OtherOptions::new(&[150, 1, 9, 53, 1, 1, 151, 0]);
        assert_eq!(
            o.iter().collect::<Vec<_>>(),
            [(150, &[9u8][..]), (151, &[][..])]
        );
    }

    #[test]
    fn refusals() {
        let mut b = ack_bytes();
        assert_eq!(
            Dhcpv4Packet::new_checked(&b[..239]).map(|_| ()),
            Err(Error::Truncated)
        );
        b[236] = 98;
        assert_eq!(
            Dhcpv4Packet::new_checked(&b[..]).map(|_| ()),
            Err(Error::Malformed("dhcp magic cookie"))
        );
        let mut b = ack_bytes();
        b[1] = 6; // token ring
        let p = Dhcpv4Packet::new_checked(&b[..]).unwrap();
        assert!(matches!(Dhcpv4Repr::parse(&p), Err(Error::Unsupported(_))));
        // A server id of 3 bytes, a message type of 9, a router list of 5 bytes.
        for (at, patch) in [
            (246usize, &[54u8, 3, 1, 2, 3, 0][..]),
            (240, &[53, 1, 9][..]),
            (270, &[3, 5, 1, 2, 3, 4, 5][..]),
        ] {
            let mut b = ack_bytes();
            b[at..at + patch.len()].copy_from_slice(patch);
            let p = Dhcpv4Packet::new_checked(&b[..]).unwrap();
            assert!(
                matches!(Dhcpv4Repr::parse(&p), Err(Error::Malformed(_))),
                "{patch:?}"
            );
        }
        // Emitting an option above 255 bytes or an empty host name is refused.
        let big = [7u8; 256];
        let mut r = ack_repr();
        r.host_name = Some(&big);
        let mut out = vec![0u8; r.buffer_len()];
        assert!(r
            .emit(&mut Dhcpv4Packet::new_unchecked(&mut out[..]))
            .is_err());
        r.host_name = Some(&[]);
        assert!(r
            .emit(&mut Dhcpv4Packet::new_unchecked(&mut out[..]))
            .is_err());
    }

    #[test]
    fn every_truncation_is_an_error_never_a_panic() {
        let b = unhex(DHCPCD_DISCOVER);
        for n in 0..b.len() {
            if let Ok(p) = Dhcpv4Packet::new_checked(&b[..n]) {
                assert!(Dhcpv4Repr::parse(&p).is_err(), "{n}: no END");
            }
        }
    }
}
