//! The pools a [`super::Dhcpv6Server`] hands out from, and the documentation prefix they must
//! lie in.

use core::net::Ipv6Addr;

/// The documentation prefix (RFC 3849) every pool must lie in (DESIGN.md §6).
pub const DOCUMENTATION_V6: (Ipv6Addr, u8) = (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32);

/// Whether `a` lies in `net/len`.
pub fn in_prefix(a: Ipv6Addr, net: Ipv6Addr, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    };
    u128::from(a) & mask == u128::from(net) & mask
}

/// Addresses `first`, `first + 1`, … (`size` of them) for IA_NA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPool {
    pub first: Ipv6Addr,
    pub size: u32,
}

impl AddressPool {
    pub(super) fn get(&self, i: u32) -> Ipv6Addr {
        Ipv6Addr::from(u128::from(self.first).wrapping_add(u128::from(i)))
    }

    pub(super) fn contains(&self, a: Ipv6Addr) -> bool {
        let (f, a) = (u128::from(self.first), u128::from(a));
        a >= f && a - f < u128::from(self.size)
    }
}

/// Prefixes of length `delegated_len` carved out of `base/base_len`, in order, for IA_PD
/// (at most `size`, and never more than the base holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixPool {
    pub base: Ipv6Addr,
    pub base_len: u8,
    pub delegated_len: u8,
    pub size: u32,
}

impl PrefixPool {
    /// How many prefixes the pool hands out.
    pub fn capacity(&self) -> u32 {
        let bits = u32::from(self.delegated_len.saturating_sub(self.base_len));
        let fits = if bits >= 32 { u32::MAX } else { 1u32 << bits };
        self.size.min(fits)
    }

    pub(super) fn get(&self, i: u32) -> Ipv6Addr {
        let shift = 128 - u32::from(self.delegated_len);
        let off = if shift >= 128 {
            0
        } else {
            u128::from(i) << shift
        };
        Ipv6Addr::from(u128::from(self.base) | off)
    }
}
