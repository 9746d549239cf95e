//! The address ranges the ISP side may hand out (DESIGN.md §6): the IPv4 documentation
//! networks (RFC 5737: 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) and, for pools of
//! thousands of subscribers, the range reserved for benchmarking network devices
//! (198.18.0.0/15, RFC 2544 Appendix C, RFC 6890); for IPv6 the documentation prefix
//! 2001:db8::/32 (RFC 3849) and the benchmarking prefix 2001:2::/48 (RFC 5180).
//!
//! A pool checked against these never sends a subscriber an address that could be someone's
//! on the Internet.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};

/// An IPv4 network: address and prefix length (host bits may be set; [`Ipv4Net::network`]
/// clears them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Net {
    pub addr: Ipv4Addr,
    pub len: u8,
}

impl Ipv4Net {
    pub const fn new(addr: Ipv4Addr, len: u8) -> Ipv4Net {
        Ipv4Net { addr, len }
    }

    fn mask_bits(&self) -> u32 {
        if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(self.len.min(32)))
        }
    }

    /// The netmask (255.255.255.0 for a /24).
    pub fn mask(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.mask_bits())
    }

    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & self.mask_bits())
    }

    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !self.mask_bits())
    }

    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & self.mask_bits() == u32::from(self.addr) & self.mask_bits()
    }

    /// Whether all of `other` lies in this network.
    pub fn covers(&self, other: &Ipv4Net) -> bool {
        other.len >= self.len && self.contains(other.addr)
    }
}

impl fmt::Display for Ipv4Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network(), self.len)
    }
}

/// The IPv4 ranges an ISP port hands out from.
pub const LAB_V4: [Ipv4Net; 4] = [
    Ipv4Net::new(Ipv4Addr::new(192, 0, 2, 0), 24),
    Ipv4Net::new(Ipv4Addr::new(198, 51, 100, 0), 24),
    Ipv4Net::new(Ipv4Addr::new(203, 0, 113, 0), 24),
    Ipv4Net::new(Ipv4Addr::new(198, 18, 0, 0), 15),
];

/// The benchmarking range for pools of thousands (RFC 2544 Appendix C).
pub const BENCHMARK_V4: Ipv4Net = LAB_V4[3];

/// The lab range holding all of `net`, if any.
pub fn lab_range_v4(net: &Ipv4Net) -> Option<Ipv4Net> {
    LAB_V4.into_iter().find(|r| r.covers(net))
}

/// The text that names the IPv4 ranges in refusals.
pub const LAB_V4_TEXT: &str =
    "192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 or, for large pools, 198.18.0.0/15";

/// The IPv6 prefixes an ISP port hands out from.
pub const LAB_V6: [(Ipv6Addr, u8); 2] = [
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32),
    (Ipv6Addr::new(0x2001, 0x2, 0, 0, 0, 0, 0, 0), 48),
];

/// The text that names the IPv6 prefixes in refusals.
pub const LAB_V6_TEXT: &str = "2001:db8::/32 or 2001:2::/48";

/// Whether `a` lies in `net/len`.
pub fn in_prefix_v6(a: Ipv6Addr, net: Ipv6Addr, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    };
    u128::from(a) & mask == u128::from(net) & mask
}

/// Whether all of `prefix/len` lies in one of [`LAB_V6`].
pub fn lab_prefix_v6(prefix: Ipv6Addr, len: u8) -> bool {
    LAB_V6
        .iter()
        .any(|&(net, l)| len >= l && in_prefix_v6(prefix, net, l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_and_ranges() {
        let n = Ipv4Net::new(Ipv4Addr::new(198, 51, 100, 7), 24);
        assert_eq!(n.network(), Ipv4Addr::new(198, 51, 100, 0));
        assert_eq!(n.broadcast(), Ipv4Addr::new(198, 51, 100, 255));
        assert_eq!(n.mask(), Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(n.to_string(), "198.51.100.0/24");
        assert_eq!(lab_range_v4(&n), Some(LAB_V4[1]));
        let big = Ipv4Net::new(Ipv4Addr::new(198, 18, 0, 1), 15);
        assert_eq!(big.broadcast(), Ipv4Addr::new(198, 19, 255, 255));
        assert_eq!(lab_range_v4(&big), Some(BENCHMARK_V4));
        assert_eq!(
            lab_range_v4(&Ipv4Net::new(Ipv4Addr::new(198, 51, 100, 0), 23)),
            None
        );
        assert_eq!(
            lab_range_v4(&Ipv4Net::new(Ipv4Addr::new(10, 0, 0, 0), 24)),
            None
        );
        assert_eq!(
            lab_range_v4(&Ipv4Net::new(Ipv4Addr::new(198, 20, 0, 0), 24)),
            None
        );
        assert!(lab_prefix_v6("2001:db8:200::".parse().unwrap(), 40));
        assert!(lab_prefix_v6("2001:2:0:100::".parse().unwrap(), 56));
        assert!(!lab_prefix_v6("2001:2::".parse().unwrap(), 47));
        assert!(!lab_prefix_v6("2001:db9::".parse().unwrap(), 48));
    }
}
