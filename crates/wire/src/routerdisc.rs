//! Router Discovery (RFC 4861 §4.1, §4.2, §4.6): Router Solicitation and Router Advertisement
//! with the options an ISP's access router sends a home gateway — source link-layer address,
//! Prefix Information (L and A flags), MTU — and Recursive DNS Server (RFC 8106).
//!
//! An RA's option list has any number of prefixes and DNS servers, so the emit side takes
//! slices ([`RouterAdvertRepr`]) and the parse side gives the fixed fields plus an iterator
//! over the options ([`NdOptions`]) instead of allocating a list. The checks that need the IP
//! header (hop limit 255, link-local source) are the caller's, as in [`crate::icmpv6`]; the
//! checksum is [`Icmpv6Packet::fill_checksum`] / [`Icmpv6Packet::verify_checksum`].

use crate::bytes::Fields;
use core::net::Ipv6Addr;

use crate::error::{Error, Result};
use crate::ethernet::MacAddr;
use crate::icmpv6::{Icmpv6Packet, LLADDR_OPT_LEN, OPT_SOURCE_LLADDR};

pub const TYPE_ROUTER_SOLICIT: u8 = 133;
pub const TYPE_ROUTER_ADVERT: u8 = 134;

/// RS: type, code, checksum, reserved.
pub const RS_LEN: usize = 8;
/// RA up to the options: type, code, checksum, hop limit, flags, router lifetime, reachable
/// time, retransmission timer.
pub const RA_LEN: usize = 16;

pub const OPT_PREFIX_INFO: u8 = 3;
pub const OPT_MTU: u8 = 5;
pub const OPT_RDNSS: u8 = 25;

/// Prefix Information option length (4 units of 8 bytes).
pub const PREFIX_OPT_LEN: usize = 32;
/// MTU option length.
pub const MTU_OPT_LEN: usize = 8;

const FLAG_MANAGED: u8 = 0x80;
const FLAG_OTHER: u8 = 0x40;
const FLAG_ON_LINK: u8 = 0x80;
const FLAG_AUTONOMOUS: u8 = 0x40;

/// One Prefix Information option (RFC 4861 §4.6.2). Lifetimes in seconds; `u32::MAX` is
/// infinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrefixInfo {
    pub prefix: Ipv6Addr,
    pub prefix_len: u8,
    /// L: the prefix is on this link (hosts reach its addresses directly).
    pub on_link: bool,
    /// A: hosts may form addresses in it themselves (SLAAC).
    pub autonomous: bool,
    pub valid_lifetime: u32,
    pub preferred_lifetime: u32,
}

impl PrefixInfo {
    fn parse(o: &[u8]) -> Result<PrefixInfo> {
        if o.len() != PREFIX_OPT_LEN {
            return Err(Error::Malformed(
                "prefix information option length is not 4",
            ));
        }
        let prefix_len = o[2];
        if prefix_len > 128 {
            return Err(Error::Malformed("prefix length above 128"));
        }
        Ok(PrefixInfo {
            prefix_len,
            on_link: o[3] & FLAG_ON_LINK != 0,
            autonomous: o[3] & FLAG_AUTONOMOUS != 0,
            valid_lifetime: o.u32_at(4..8),
            preferred_lifetime: o.u32_at(8..12),
            prefix: addr(&o[16..32]),
        })
    }

    fn emit(&self, o: &mut [u8]) {
        o[0] = OPT_PREFIX_INFO;
        o[1] = (PREFIX_OPT_LEN / 8) as u8;
        o[2] = self.prefix_len;
        o[3] = if self.on_link { FLAG_ON_LINK } else { 0 }
            | if self.autonomous { FLAG_AUTONOMOUS } else { 0 };
        o[4..8].copy_from_slice(&self.valid_lifetime.to_be_bytes());
        o[8..12].copy_from_slice(&self.preferred_lifetime.to_be_bytes());
        o[12..16].fill(0);
        o[16..32].copy_from_slice(&self.prefix.octets());
    }
}

fn addr(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(b);
    Ipv6Addr::from(a)
}

/// One ND option of a Router Solicitation or Advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdOption<'a> {
    SourceLladdr(MacAddr),
    Prefix(PrefixInfo),
    Mtu(u32),
    /// Recursive DNS servers (RFC 8106 §5.1): lifetime in seconds and the addresses (a
    /// multiple of 16 bytes; [`NdOption::rdnss_servers`] iterates them).
    Rdnss {
        lifetime: u32,
        servers: &'a [u8],
    },
    /// Any other option: its type and whole bytes (type and length included).
    Other {
        kind: u8,
        bytes: &'a [u8],
    },
}

impl<'a> NdOption<'a> {
    /// The addresses of an RDNSS option (empty for any other option).
    pub fn rdnss_servers(&self) -> impl Iterator<Item = Ipv6Addr> + 'a {
        let s: &'a [u8] = match self {
            NdOption::Rdnss { servers, .. } => servers,
            _ => &[],
        };
        s.chunks_exact(16).map(addr)
    }
}

/// The options of an RS/RA, in order. Yields an error (and then stops) at the first option
/// whose length is 0 or runs past the message, or a known option with an impossible length.
#[derive(Debug, Clone)]
pub struct NdOptions<'a> {
    rest: &'a [u8],
}

impl<'a> NdOptions<'a> {
    pub fn new(options: &'a [u8]) -> NdOptions<'a> {
        NdOptions { rest: options }
    }
}

impl<'a> Iterator for NdOptions<'a> {
    type Item = Result<NdOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        let Some(&units) = r.get(1) else {
            self.rest = &[];
            return Some(Err(Error::Malformed("ndisc option truncated")));
        };
        let len = usize::from(units) * 8;
        if len == 0 {
            self.rest = &[];
            return Some(Err(Error::Malformed("ndisc option length 0")));
        }
        let Some(o) = r.get(..len) else {
            self.rest = &[];
            return Some(Err(Error::Malformed("ndisc option overruns the message")));
        };
        self.rest = &r[len..];
        let parsed = match o[0] {
            OPT_SOURCE_LLADDR if len == LLADDR_OPT_LEN => {
                MacAddr::from_slice(&o[2..8]).map(NdOption::SourceLladdr)
            }
            OPT_PREFIX_INFO => PrefixInfo::parse(o).map(NdOption::Prefix),
            OPT_MTU if len == MTU_OPT_LEN => Ok(NdOption::Mtu(o.u32_at(4..8))),
            OPT_MTU => Err(Error::Malformed("mtu option length is not 1")),
            OPT_RDNSS if len >= 24 => Ok(NdOption::Rdnss {
                lifetime: o.u32_at(4..8),
                servers: &o[8..],
            }),
            OPT_RDNSS => Err(Error::Malformed("rdnss option without an address")),
            kind => Ok(NdOption::Other { kind, bytes: o }),
        };
        if parsed.is_err() {
            self.rest = &[];
        }
        Some(parsed)
    }
}

/// A Router Solicitation (RFC 4861 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouterSolicitRepr {
    pub source_lladdr: Option<MacAddr>,
}

impl RouterSolicitRepr {
    /// Structural parse (type 133, code 0, every option well framed).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&T>) -> Result<RouterSolicitRepr> {
        let b = packet.as_ref();
        if b.len() < RS_LEN {
            return Err(Error::Truncated);
        }
        if b[0] != TYPE_ROUTER_SOLICIT {
            return Err(Error::Unsupported(
                "icmpv6 type other than router solicitation",
            ));
        }
        if b[1] != 0 {
            return Err(Error::Malformed("router solicitation code is not 0"));
        }
        let mut source_lladdr = None;
        for o in NdOptions::new(&b[RS_LEN..]) {
            if let NdOption::SourceLladdr(m) = o? {
                source_lladdr = source_lladdr.or(Some(m));
            }
        }
        Ok(RouterSolicitRepr { source_lladdr })
    }

    pub const fn buffer_len(&self) -> usize {
        RS_LEN
            + if self.source_lladdr.is_some() {
                LLADDR_OPT_LEN
            } else {
                0
            }
    }

    /// Writes the message with checksum 0 (then [`Icmpv6Packet::fill_checksum`]).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv6Packet<T>) -> Result<()> {
        if packet.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        packet.set_msg_type(TYPE_ROUTER_SOLICIT);
        packet.set_msg_code(0);
        packet.set_checksum(0);
        let b = packet_bytes(packet);
        b[4..8].fill(0);
        if let Some(m) = self.source_lladdr {
            lladdr(&mut b[RS_LEN..RS_LEN + LLADDR_OPT_LEN], m);
        }
        Ok(())
    }
}

fn packet_bytes<T: AsRef<[u8]> + AsMut<[u8]>>(p: &mut Icmpv6Packet<T>) -> &mut [u8] {
    p.buffer_mut()
}

fn lladdr(o: &mut [u8], m: MacAddr) {
    o[0] = OPT_SOURCE_LLADDR;
    o[1] = 1;
    o[2..8].copy_from_slice(&m.0);
}

/// The fixed fields of a Router Advertisement (RFC 4861 §4.2), as parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouterAdvertHeader {
    /// Current hop limit hosts should use (0: unspecified).
    pub hop_limit: u8,
    /// M: addresses come from stateful DHCPv6.
    pub managed: bool,
    /// O: other configuration (DNS, AFTR name, …) comes from DHCPv6.
    pub other: bool,
    /// Seconds this router may be a default router (0: not a default router).
    pub router_lifetime: u16,
    /// Milliseconds (0: unspecified).
    pub reachable_time: u32,
    /// Milliseconds (0: unspecified).
    pub retrans_timer: u32,
}

impl RouterAdvertHeader {
    /// Structural parse of the fixed part; the options follow at [`RA_LEN`] (iterate them with
    /// [`NdOptions`]).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&T>) -> Result<RouterAdvertHeader> {
        let b = packet.as_ref();
        if b.len() < RA_LEN {
            return Err(Error::Truncated);
        }
        if b[0] != TYPE_ROUTER_ADVERT {
            return Err(Error::Unsupported(
                "icmpv6 type other than router advertisement",
            ));
        }
        if b[1] != 0 {
            return Err(Error::Malformed("router advertisement code is not 0"));
        }
        Ok(RouterAdvertHeader {
            hop_limit: b[4],
            managed: b[5] & FLAG_MANAGED != 0,
            other: b[5] & FLAG_OTHER != 0,
            router_lifetime: u16::from_be_bytes([b[6], b[7]]),
            reachable_time: b.u32_at(8..12),
            retrans_timer: b.u32_at(12..16),
        })
    }
}

/// A Router Advertisement to emit: the fixed fields and the options, in this order: source
/// link-layer address, MTU, prefixes, RDNSS (one option for all servers, if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterAdvertRepr<'a> {
    pub header: RouterAdvertHeader,
    pub source_lladdr: Option<MacAddr>,
    pub mtu: Option<u32>,
    pub prefixes: &'a [PrefixInfo],
    /// Lifetime of the RDNSS option in seconds.
    pub rdnss_lifetime: u32,
    pub rdnss: &'a [Ipv6Addr],
}

impl RouterAdvertRepr<'_> {
    pub fn buffer_len(&self) -> usize {
        RA_LEN
            + if self.source_lladdr.is_some() {
                LLADDR_OPT_LEN
            } else {
                0
            }
            + if self.mtu.is_some() { MTU_OPT_LEN } else { 0 }
            + self.prefixes.len() * PREFIX_OPT_LEN
            + if self.rdnss.is_empty() {
                0
            } else {
                8 + 16 * self.rdnss.len()
            }
    }

    /// Writes the whole message with checksum 0 (then [`Icmpv6Packet::fill_checksum`]).
    /// Refuses more than 127 DNS servers (the option's length is one byte of 8-byte units).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv6Packet<T>) -> Result<()> {
        if self.rdnss.len() > 127 {
            return Err(Error::Malformed("more than 127 rdnss servers"));
        }
        let len = self.buffer_len();
        if packet.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        packet.set_msg_type(TYPE_ROUTER_ADVERT);
        packet.set_msg_code(0);
        packet.set_checksum(0);
        let h = &self.header;
        let b = packet_bytes(packet);
        b[4] = h.hop_limit;
        b[5] = if h.managed { FLAG_MANAGED } else { 0 } | if h.other { FLAG_OTHER } else { 0 };
        b[6..8].copy_from_slice(&h.router_lifetime.to_be_bytes());
        b[8..12].copy_from_slice(&h.reachable_time.to_be_bytes());
        b[12..16].copy_from_slice(&h.retrans_timer.to_be_bytes());
        let mut at = RA_LEN;
        if let Some(m) = self.source_lladdr {
            lladdr(&mut b[at..at + LLADDR_OPT_LEN], m);
            at += LLADDR_OPT_LEN;
        }
        if let Some(mtu) = self.mtu {
            let o = &mut b[at..at + MTU_OPT_LEN];
            o[..4].copy_from_slice(&[OPT_MTU, 1, 0, 0]);
            o[4..].copy_from_slice(&mtu.to_be_bytes());
            at += MTU_OPT_LEN;
        }
        for p in self.prefixes {
            p.emit(&mut b[at..at + PREFIX_OPT_LEN]);
            at += PREFIX_OPT_LEN;
        }
        if !self.rdnss.is_empty() {
            let n = 8 + 16 * self.rdnss.len();
            let o = &mut b[at..at + n];
            o[..4].copy_from_slice(&[OPT_RDNSS, (n / 8) as u8, 0, 0]);
            o[4..8].copy_from_slice(&self.rdnss_lifetime.to_be_bytes());
            for (i, s) in self.rdnss.iter().enumerate() {
                o[8 + 16 * i..24 + 16 * i].copy_from_slice(&s.octets());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    const MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0a]);

    // RA from fe80::ff:fe00:a (02:00:00:00:00:0a) to ff02::1: hop limit 64, M and O,
    // router lifetime 1800 s, MTU 1500, prefix 2001:db8:c::/64 L+A valid 7200 preferred 3600,
    // RDNSS 2001:db8:53::1 lifetime 1800. Checksum computed independently (Python, RFC 8200
    // §8.1 pseudo-header over these 96 bytes).
    static RA_BYTES: [u8; 96] = [
        0x86, 0x00, 0x26, 0x47, 0x40, 0xc0, 0x07, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, // fixed part
        0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // source lladdr
        0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0x05, 0xdc, // MTU 1500
        0x03, 0x04, 0x40, 0xc0, 0x00, 0x00, 0x1c, 0x20, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x00,
        0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, // prefix
        0x19, 0x03, 0x00, 0x00, 0x00, 0x00, 0x07, 0x08, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x53, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // RDNSS
        0x0e, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // an unknown option (type 14)
    ];

    fn prefix() -> PrefixInfo {
        PrefixInfo {
            prefix: a("2001:db8:c::"),
            prefix_len: 64,
            on_link: true,
            autonomous: true,
            valid_lifetime: 7200,
            preferred_lifetime: 3600,
        }
    }

    fn header() -> RouterAdvertHeader {
        RouterAdvertHeader {
            hop_limit: 64,
            managed: true,
            other: true,
            router_lifetime: 1800,
            reachable_time: 0,
            retrans_timer: 0,
        }
    }

    #[test]
    fn test_parse_ra() {
        let p = Icmpv6Packet::new_checked(&RA_BYTES[..]).unwrap();
        assert!(p.verify_checksum(a("fe80::ff:fe00:a"), a("ff02::1")));
        assert_eq!(RouterAdvertHeader::parse(&p), Ok(header()));
        let opts: Vec<_> = NdOptions::new(&RA_BYTES[RA_LEN..])
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(opts.len(), 5);
        assert_eq!(opts[0], NdOption::SourceLladdr(MAC));
        assert_eq!(opts[1], NdOption::Mtu(1500));
        assert_eq!(opts[2], NdOption::Prefix(prefix()));
        assert!(matches!(opts[3], NdOption::Rdnss { lifetime: 1800, .. }));
        assert_eq!(
            opts[3].rdnss_servers().collect::<Vec<_>>(),
            vec![a("2001:db8:53::1")]
        );
        assert_eq!(
            opts[4],
            NdOption::Other {
                kind: 14,
                bytes: &RA_BYTES[88..]
            }
        );
    }

    #[test]
    fn test_emit_ra() {
        let servers = [a("2001:db8:53::1")];
        let prefixes = [prefix()];
        let r = RouterAdvertRepr {
            header: header(),
            source_lladdr: Some(MAC),
            mtu: Some(1500),
            prefixes: &prefixes,
            rdnss_lifetime: 1800,
            rdnss: &servers,
        };
        assert_eq!(r.buffer_len(), 88);
        let mut b = vec![0xa5; 96];
        b[88..].copy_from_slice(&RA_BYTES[88..]);
        let mut p = Icmpv6Packet::new_unchecked(&mut b);
        r.emit(&mut p).unwrap();
        p.fill_checksum(a("fe80::ff:fe00:a"), a("ff02::1"));
        assert_eq!(&b[..], &RA_BYTES[..]);
        let mut short = vec![0u8; 87];
        assert_eq!(
            r.emit(&mut Icmpv6Packet::new_unchecked(&mut short)),
            Err(Error::Truncated)
        );
    }

    // RS from fe80::1 with source lladdr 02:00:00:00:00:0b to ff02::2 (checksum independent).
    static RS_BYTES: [u8; 16] = [
        0x85, 0x00, 0x7a, 0x22, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x0b,
    ];

    #[test]
    fn test_rs() {
        let p = Icmpv6Packet::new_checked(&RS_BYTES[..]).unwrap();
        assert!(p.verify_checksum(a("fe80::1"), a("ff02::2")));
        let r = RouterSolicitRepr::parse(&p).unwrap();
        assert_eq!(r.source_lladdr, Some(MacAddr([2, 0, 0, 0, 0, 0x0b])));
        let mut b = vec![0xa5; r.buffer_len()];
        let mut q = Icmpv6Packet::new_unchecked(&mut b);
        r.emit(&mut q).unwrap();
        q.fill_checksum(a("fe80::1"), a("ff02::2"));
        assert_eq!(&b[..], &RS_BYTES[..]);
        // Without options.
        let bare = RouterSolicitRepr::parse(&Icmpv6Packet::new_unchecked(&RS_BYTES[..8]));
        assert_eq!(
            bare,
            Ok(RouterSolicitRepr {
                source_lladdr: None
            })
        );
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            RouterSolicitRepr::parse(&Icmpv6Packet::new_unchecked(&RS_BYTES[..7])),
            Err(Error::Truncated)
        );
        assert!(matches!(
            RouterAdvertHeader::parse(&Icmpv6Packet::new_unchecked(&RS_BYTES[..])),
            Err(Error::Unsupported(_))
        ));
        let mut b = RS_BYTES;
        b[9] = 0;
        assert!(RouterSolicitRepr::parse(&Icmpv6Packet::new_unchecked(&b[..])).is_err());
        b[9] = 2;
        assert!(RouterSolicitRepr::parse(&Icmpv6Packet::new_unchecked(&b[..])).is_err());
        let mut r = RA_BYTES;
        r[1] = 1;
        assert!(matches!(
            RouterAdvertHeader::parse(&Icmpv6Packet::new_unchecked(&r[..])),
            Err(Error::Malformed(_))
        ));
        let mut r = RA_BYTES;
        r[34] = 129; // prefix length
        assert!(NdOptions::new(&r[RA_LEN..]).any(|o| o.is_err()));
        let mut r = RA_BYTES;
        r[25] = 2; // MTU option of 16 bytes
        assert!(NdOptions::new(&r[RA_LEN..]).any(|o| o.is_err()));
        // Every truncation parses to an error or fewer options, never a panic.
        for n in 0..RA_BYTES.len() {
            let _ = NdOptions::new(&RA_BYTES[RA_LEN.min(n)..n]).count();
            let _ = RouterAdvertHeader::parse(&Icmpv6Packet::new_unchecked(&RA_BYTES[..n]));
        }
    }
}
