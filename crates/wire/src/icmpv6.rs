//! ICMPv6 (RFC 4443) as far as Neighbor Discovery address resolution (RFC 4861 §4.3, §4.4)
//! needs it: Neighbor Solicitation and Advertisement with their link-layer address options,
//! the pseudo-header checksum, and the solicited-node multicast address and MAC.
//!
//! Every other ICMPv6 type parses as `Unsupported`: the ND responder ignores it.
//! The RFC 4861 §7.1 checks that need the IP header (hop limit 255, no source link-layer
//! option when the source is unspecified) are the caller's.

use core::net::Ipv6Addr;
use core::ops::Range;

use crate::checksum;
use crate::error::{Error, Result};
use crate::ethernet::MacAddr;

/// Type, code, checksum.
pub const HEADER_LEN: usize = 4;
/// NS/NA up to and including the target address.
pub const NDISC_LEN: usize = 24;
/// One link-layer address option for Ethernet.
pub const LLADDR_OPT_LEN: usize = 8;

pub const TYPE_NEIGHBOR_SOLICIT: u8 = 135;
pub const TYPE_NEIGHBOR_ADVERT: u8 = 136;
pub const OPT_SOURCE_LLADDR: u8 = 1;
pub const OPT_TARGET_LLADDR: u8 = 2;

const NEXT_HEADER_ICMPV6: u8 = 58;
const FLAG_ROUTER: u8 = 0x80;
const FLAG_SOLICITED: u8 = 0x40;
const FLAG_OVERRIDE: u8 = 0x20;

mod field {
    use super::*;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const RESERVED: Range<usize> = 4..8;
    pub const FLAGS: usize = 4;
    pub const TARGET: Range<usize> = 8..24;
}

/// A read/write view of an ICMPv6 message (the whole IPv6 upper-layer payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv6Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the 4-byte common header. The ND getters (`nd_flags`, `target_addr`,
    /// `options`) additionally need [`NDISC_LEN`] bytes, which [`NdiscRepr::parse`] checks.
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

    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    pub fn checksum(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The R/S/O flag byte of a Neighbor Advertisement.
    pub fn nd_flags(&self) -> NeighborFlags {
        let b = self.buffer.as_ref()[field::FLAGS];
        NeighborFlags {
            router: b & FLAG_ROUTER != 0,
            solicited: b & FLAG_SOLICITED != 0,
            override_flag: b & FLAG_OVERRIDE != 0,
        }
    }

    pub fn target_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::TARGET]);
        Ipv6Addr::from(a)
    }

    /// Whether the checksum verifies for this source and destination.
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let d = self.buffer.as_ref();
        checksum::fold(
            checksum::pseudo_header_v6(src, dst, NEXT_HEADER_ICMPV6, d.len() as u32)
                + checksum::sum(d),
        ) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv6Packet<&'a T> {
    /// The ND options after the target address.
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[NDISC_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }

    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Writes the flag byte and zeroes the rest of the reserved word.
    pub fn set_nd_flags(&mut self, f: NeighborFlags) {
        let mut b = 0;
        if f.router {
            b |= FLAG_ROUTER;
        }
        if f.solicited {
            b |= FLAG_SOLICITED;
        }
        if f.override_flag {
            b |= FLAG_OVERRIDE;
        }
        self.buffer.as_mut()[field::RESERVED].copy_from_slice(&[b, 0, 0, 0]);
    }

    pub fn set_target_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::TARGET].copy_from_slice(&a.octets());
    }

    /// The whole message, for the other ICMPv6 formats built on this view
    /// ([`crate::routerdisc`]).
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn options_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[NDISC_LEN..]
    }

    /// Computes the checksum over the whole buffer with the IPv6 pseudo-header.
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let d = self.buffer.as_ref();
        let c = !checksum::fold(
            checksum::pseudo_header_v6(src, dst, NEXT_HEADER_ICMPV6, d.len() as u32)
                + checksum::sum(d),
        );
        self.set_checksum(c);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Icmpv6Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// Neighbor Advertisement flags (RFC 4861 §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NeighborFlags {
    pub router: bool,
    pub solicited: bool,
    /// The O flag (`override` is a reserved word in Rust).
    pub override_flag: bool,
}

/// A Neighbor Solicitation or Advertisement on an Ethernet link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdiscRepr {
    NeighborSolicit {
        target: Ipv6Addr,
        source_lladdr: Option<MacAddr>,
    },
    NeighborAdvert {
        flags: NeighborFlags,
        target: Ipv6Addr,
        target_lladdr: Option<MacAddr>,
    },
}

/// Finds the link-layer address option of `kind`; validates every option's length.
fn find_lladdr(mut opts: &[u8], kind: u8) -> Result<Option<MacAddr>> {
    let mut found = None;
    while !opts.is_empty() {
        let len = usize::from(
            *opts
                .get(1)
                .ok_or(Error::Malformed("ndisc option truncated"))?,
        ) * 8;
        if len == 0 {
            return Err(Error::Malformed("ndisc option length 0"));
        }
        let opt = opts
            .get(..len)
            .ok_or(Error::Malformed("ndisc option overruns the message"))?;
        if opt[0] == kind && found.is_none() {
            if len != LLADDR_OPT_LEN {
                return Err(Error::Unsupported(
                    "link-layer address option for a non-ethernet link",
                ));
            }
            found = Some(MacAddr::from_slice(&opt[2..8])?);
        }
        opts = &opts[len..];
    }
    Ok(found)
}

impl NdiscRepr {
    /// Structural parse; verify the checksum with [`Icmpv6Packet::verify_checksum`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&T>) -> Result<NdiscRepr> {
        packet.check_len()?;
        let msg_type = packet.msg_type();
        if msg_type != TYPE_NEIGHBOR_SOLICIT && msg_type != TYPE_NEIGHBOR_ADVERT {
            return Err(Error::Unsupported(
                "icmpv6 type other than neighbor solicitation/advertisement",
            ));
        }
        if packet.buffer.as_ref().len() < NDISC_LEN {
            return Err(Error::Truncated);
        }
        if packet.msg_code() != 0 {
            return Err(Error::Malformed("ndisc code is not 0"));
        }
        let target = packet.target_addr();
        if target.is_multicast() {
            return Err(Error::Malformed("ndisc target is a multicast address"));
        }
        Ok(if msg_type == TYPE_NEIGHBOR_SOLICIT {
            NdiscRepr::NeighborSolicit {
                target,
                source_lladdr: find_lladdr(packet.options(), OPT_SOURCE_LLADDR)?,
            }
        } else {
            NdiscRepr::NeighborAdvert {
                flags: packet.nd_flags(),
                target,
                target_lladdr: find_lladdr(packet.options(), OPT_TARGET_LLADDR)?,
            }
        })
    }

    /// Message length: 24 bytes, plus 8 with a link-layer address option.
    pub const fn buffer_len(&self) -> usize {
        let has_opt = match self {
            NdiscRepr::NeighborSolicit { source_lladdr, .. } => source_lladdr.is_some(),
            NdiscRepr::NeighborAdvert { target_lladdr, .. } => target_lladdr.is_some(),
        };
        if has_opt {
            NDISC_LEN + LLADDR_OPT_LEN
        } else {
            NDISC_LEN
        }
    }

    /// Writes the whole message with checksum 0; call [`Icmpv6Packet::fill_checksum`] next.
    /// The buffer must be exactly [`buffer_len`](Self::buffer_len) long or longer by whole
    /// options the caller fills in, since the checksum covers all of it.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv6Packet<T>) -> Result<()> {
        if packet.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        let (msg_type, flags, target, opt) = match *self {
            NdiscRepr::NeighborSolicit {
                target,
                source_lladdr,
            } => (
                TYPE_NEIGHBOR_SOLICIT,
                NeighborFlags::default(),
                target,
                source_lladdr.map(|m| (OPT_SOURCE_LLADDR, m)),
            ),
            NdiscRepr::NeighborAdvert {
                flags,
                target,
                target_lladdr,
            } => (
                TYPE_NEIGHBOR_ADVERT,
                flags,
                target,
                target_lladdr.map(|m| (OPT_TARGET_LLADDR, m)),
            ),
        };
        packet.set_msg_type(msg_type);
        packet.set_msg_code(0);
        packet.set_checksum(0);
        packet.set_nd_flags(flags);
        packet.set_target_addr(target);
        if let Some((kind, mac)) = opt {
            let o = &mut packet.options_mut()[..LLADDR_OPT_LEN];
            o[0] = kind;
            o[1] = 1;
            o[2..].copy_from_slice(&mac.0);
        }
        Ok(())
    }
}

/// The solicited-node multicast group of `addr`: ff02::1:ff00:0/104 plus its low 24 bits
/// (RFC 4291 §2.7.1). Neighbor Solicitations for `addr` are sent there.
pub fn solicited_node_multicast(addr: Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15],
    ])
}

/// The Ethernet address of an IPv6 multicast group: 33:33 and the group's low 32 bits
/// (RFC 2464 §7).
pub fn multicast_mac(group: Ipv6Addr) -> MacAddr {
    let o = group.octets();
    MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

/// 33:33:ff:xx:xx:xx for the solicited-node group of `addr`.
pub fn solicited_node_mac(addr: Ipv6Addr) -> MacAddr {
    multicast_mac(solicited_node_multicast(addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    // NS from 2001:db8::1 (02:00:00:00:00:01) for 2001:db8::2, sent to ff02::1:ff00:2.
    // Checksum computed independently (Python, RFC 8200 §8.1 pseudo-header).
    static NS_BYTES: [u8; 32] = [
        0x87, 0x00, 0x1c, 0x27, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00,
        0x00, 0x01,
    ];

    // The solicited NA back from 2001:db8::2 (02:00:00:00:00:02), S and O set.
    static NA_BYTES: [u8; 32] = [
        0x88, 0x00, 0x8a, 0x71, 0x60, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x02, 0x00, 0x00, 0x00,
        0x00, 0x02,
    ];

    fn ns() -> NdiscRepr {
        NdiscRepr::NeighborSolicit {
            target: a("2001:db8::2"),
            source_lladdr: Some(MacAddr([2, 0, 0, 0, 0, 1])),
        }
    }

    fn na() -> NdiscRepr {
        NdiscRepr::NeighborAdvert {
            flags: NeighborFlags {
                router: false,
                solicited: true,
                override_flag: true,
            },
            target: a("2001:db8::2"),
            target_lladdr: Some(MacAddr([2, 0, 0, 0, 0, 2])),
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Icmpv6Packet::new_checked(&NS_BYTES[..]).unwrap();
        assert_eq!(p.msg_type(), TYPE_NEIGHBOR_SOLICIT);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0x1c27);
        assert_eq!(p.target_addr(), a("2001:db8::2"));
        assert_eq!(p.options(), &[1, 1, 2, 0, 0, 0, 0, 1]);
        assert!(p.verify_checksum(a("2001:db8::1"), a("ff02::1:ff00:2")));
        assert!(!p.verify_checksum(a("2001:db8::1"), a("ff02::1")));
        let p = Icmpv6Packet::new_checked(&NA_BYTES[..]).unwrap();
        assert_eq!(
            p.nd_flags(),
            NeighborFlags {
                router: false,
                solicited: true,
                override_flag: true
            }
        );
        assert!(p.verify_checksum(a("2001:db8::2"), a("2001:db8::1")));
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 32];
        let mut p = Icmpv6Packet::new_unchecked(&mut bytes);
        p.set_msg_type(TYPE_NEIGHBOR_ADVERT);
        p.set_msg_code(0);
        p.set_nd_flags(NeighborFlags {
            router: false,
            solicited: true,
            override_flag: true,
        });
        p.set_target_addr(a("2001:db8::2"));
        p.options_mut().copy_from_slice(&[2, 1, 2, 0, 0, 0, 0, 2]);
        p.fill_checksum(a("2001:db8::2"), a("2001:db8::1"));
        assert_eq!(&bytes[..], &NA_BYTES[..]);
    }

    #[test]
    fn test_parse() {
        assert_eq!(
            NdiscRepr::parse(&Icmpv6Packet::new_checked(&NS_BYTES[..]).unwrap()),
            Ok(ns())
        );
        assert_eq!(
            NdiscRepr::parse(&Icmpv6Packet::new_checked(&NA_BYTES[..]).unwrap()),
            Ok(na())
        );
        // Without options.
        let r = NdiscRepr::parse(&Icmpv6Packet::new_checked(&NS_BYTES[..24]).unwrap()).unwrap();
        assert_eq!(
            r,
            NdiscRepr::NeighborSolicit {
                target: a("2001:db8::2"),
                source_lladdr: None
            }
        );
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 32];
        let mut p = Icmpv6Packet::new_unchecked(&mut bytes);
        ns().emit(&mut p).unwrap();
        p.fill_checksum(a("2001:db8::1"), a("ff02::1:ff00:2"));
        assert_eq!(&bytes[..], &NS_BYTES[..]);
        let mut bytes = vec![0xa5; 32];
        let mut p = Icmpv6Packet::new_unchecked(&mut bytes);
        na().emit(&mut p).unwrap();
        p.fill_checksum(a("2001:db8::2"), a("2001:db8::1"));
        assert_eq!(&bytes[..], &NA_BYTES[..]);
        assert_eq!(ns().buffer_len(), 32);
        let mut short = [0u8; 31];
        assert_eq!(
            ns().emit(&mut Icmpv6Packet::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn parse_errors() {
        let echo = [128u8, 0, 0, 0, 0, 1, 0, 1];
        assert!(matches!(
            NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&echo[..])),
            Err(Error::Unsupported(_))
        ));
        assert_eq!(
            NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&NS_BYTES[..23])),
            Err(Error::Truncated)
        );
        assert_eq!(
            Icmpv6Packet::new_checked(&NS_BYTES[..3]),
            Err(Error::Truncated)
        );
        let mut b = NS_BYTES;
        b[1] = 1;
        assert!(matches!(
            NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&b[..])),
            Err(Error::Malformed(_))
        ));
        let mut b = NS_BYTES;
        b[8] = 0xff;
        assert!(matches!(
            NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&b[..])),
            Err(Error::Malformed(_))
        ));
        let mut b = NS_BYTES;
        b[25] = 0; // option length 0
        assert!(matches!(
            NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&b[..])),
            Err(Error::Malformed(_))
        ));
        let mut b = NS_BYTES;
        b[25] = 2; // option overruns
        assert!(matches!(
            NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&b[..])),
            Err(Error::Malformed(_))
        ));
        // Unknown options are skipped; the wanted one is still found.
        let mut v = NS_BYTES[..24].to_vec();
        v.extend([14, 1, 0, 0, 0, 0, 0, 0]); // nonce option
        v.extend(&NS_BYTES[24..]);
        assert_eq!(
            NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&v[..])),
            Ok(ns())
        );
    }

    #[test]
    fn solicited_node() {
        let addr = a("2001:db8::abcd:1234:5678");
        assert_eq!(solicited_node_multicast(addr), a("ff02::1:ff34:5678"));
        assert_eq!(
            solicited_node_mac(addr),
            MacAddr([0x33, 0x33, 0xff, 0x34, 0x56, 0x78])
        );
        assert_eq!(
            multicast_mac(a("ff02::1")),
            MacAddr([0x33, 0x33, 0, 0, 0, 1])
        );
    }
}
