//! What a [`super::Dhcpv4Server`] hands out, and the check that keeps it inside the lab.

use core::net::Ipv4Addr;
use std::fmt;

use crate::ranges::{lab_range_v4, Ipv4Net, LAB_V4_TEXT};

/// What the server hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dhcpv4Config {
    /// Our address on the link: the server identifier (option 54) and the default router
    /// (option 3).
    pub gateway: Ipv4Addr,
    /// The subnet's prefix length (option 1 is its mask).
    pub prefix_len: u8,
    /// Addresses `pool_first`, `pool_first + 1`, … (`pool_size` of them).
    pub pool_first: Ipv4Addr,
    pub pool_size: u32,
    /// DNS servers (option 6); none: the option is left out.
    pub dns: Vec<Ipv4Addr>,
    /// Lease time, seconds (option 51). T1 (58) and T2 (59) are 1/2 and 7/8 of it (RFC 2131
    /// §4.4.5).
    pub lease_time: u32,
    /// How long an OFFER holds its address for the client's REQUEST, seconds.
    pub offer_hold: u32,
    /// How long a declined address stays out of the pool, seconds.
    pub decline_hold: u32,
}

/// The IPoE defaults: gateway 198.51.100.1/24, 240 addresses from 198.51.100.10, DNS
/// 203.0.113.53, one-hour leases.
pub mod defaults {
    use core::net::Ipv4Addr;

    pub const GATEWAY: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
    pub const PREFIX_LEN: u8 = 24;
    pub const POOL_FIRST: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
    pub const POOL_SIZE: u32 = 240;
    /// Outside the subscribers' /24, so the gateway reaches it through its default router
    /// (us), as it would an ISP's resolver.
    pub const DNS: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 53);
    pub const LEASE_TIME: u32 = 3600;
}

impl Default for Dhcpv4Config {
    fn default() -> Dhcpv4Config {
        Dhcpv4Config {
            gateway: defaults::GATEWAY,
            prefix_len: defaults::PREFIX_LEN,
            pool_first: defaults::POOL_FIRST,
            pool_size: defaults::POOL_SIZE,
            dns: vec![defaults::DNS],
            lease_time: defaults::LEASE_TIME,
            offer_hold: 30,
            decline_hold: 600,
        }
    }
}

impl Dhcpv4Config {
    /// The subnet the gateway and the pool are in.
    pub fn subnet(&self) -> Ipv4Net {
        Ipv4Net::new(self.gateway, self.prefix_len)
    }

    pub(super) fn pool_addr(&self, i: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.pool_first).wrapping_add(i))
    }

    /// The pool index of `a`, if it is a pool address.
    pub(super) fn pool_index(&self, a: Ipv4Addr) -> Option<u32> {
        let i = u32::from(a).wrapping_sub(u32::from(self.pool_first));
        (i < self.pool_size).then_some(i)
    }

    /// Refuses what cannot work or would leave the lab's address space, saying what would:
    /// a subnet outside the documentation /24s and 198.18.0.0/15, a pool of 0 or one that
    /// leaves the subnet or holds its network, broadcast or gateway address, a lease under
    /// 10 s, DNS servers outside those ranges.
    pub fn check(&self) -> Result<(), Dhcpv4ConfigError> {
        use Dhcpv4ConfigError as E;
        let net = self.subnet();
        if !(8..=30).contains(&self.prefix_len) || lab_range_v4(&net).is_none() {
            return Err(E::SubnetOutsideLab {
                subnet: net,
                gateway: self.gateway,
            });
        }
        if self.gateway == net.network() || self.gateway == net.broadcast() {
            return Err(E::GatewayNotAHost {
                gateway: self.gateway,
                subnet: net,
            });
        }
        if self.pool_size == 0 {
            return Err(E::EmptyPool);
        }
        let first = u32::from(self.pool_first);
        let last = first.checked_add(self.pool_size - 1);
        let usable_last = u32::from(net.broadcast()) - 1;
        if !net.contains(self.pool_first) || first <= u32::from(net.network()) {
            return Err(E::PoolStartOutside {
                subnet: net,
                pool_first: self.pool_first,
            });
        }
        let Some(last) = last.filter(|&l| l <= usable_last) else {
            return Err(E::PoolPastBroadcast {
                subnet: net,
                pool_first: self.pool_first,
                pool_size: self.pool_size,
                usable_last: Ipv4Addr::from(usable_last),
                largest: usable_last - first + 1,
            });
        };
        let gw = u32::from(self.gateway);
        if (first..=last).contains(&gw) {
            return Err(E::PoolHoldsGateway {
                pool_first: self.pool_first,
                pool_last: Ipv4Addr::from(last),
                gateway: self.gateway,
            });
        }
        if self.lease_time < 10 {
            return Err(E::LeaseTooShort {
                seconds: self.lease_time,
            });
        }
        for d in &self.dns {
            if lab_range_v4(&Ipv4Net::new(*d, 32)).is_none() {
                return Err(E::DnsOutsideLab { dns: *d });
            }
        }
        Ok(())
    }
}

/// Why [`Dhcpv4Config::check`] refused a configuration; the message says what would work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dhcpv4ConfigError {
    /// The gateway's subnet is not a /8../30 inside the lab's IPv4 ranges.
    SubnetOutsideLab { subnet: Ipv4Net, gateway: Ipv4Addr },
    /// The gateway is the subnet's network or broadcast address.
    GatewayNotAHost { gateway: Ipv4Addr, subnet: Ipv4Net },
    /// A pool of size 0.
    EmptyPool,
    /// The pool starts outside the subnet or at its network address.
    PoolStartOutside {
        subnet: Ipv4Net,
        pool_first: Ipv4Addr,
    },
    /// The pool runs into the broadcast address; `largest` is the pool that fits from there.
    PoolPastBroadcast {
        subnet: Ipv4Net,
        pool_first: Ipv4Addr,
        pool_size: u32,
        usable_last: Ipv4Addr,
        largest: u32,
    },
    /// The gateway's own address is inside the pool.
    PoolHoldsGateway {
        pool_first: Ipv4Addr,
        pool_last: Ipv4Addr,
        gateway: Ipv4Addr,
    },
    /// A lease time under 10 s.
    LeaseTooShort { seconds: u32 },
    /// A DNS server outside the lab's IPv4 ranges.
    DnsOutsideLab { dns: Ipv4Addr },
}

impl fmt::Display for Dhcpv4ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dhcpv4ConfigError::SubnetOutsideLab { subnet, gateway } => write!(
                f,
                "the subnet {subnet} (gateway {gateway}) is not inside {LAB_V4_TEXT}"
            ),
            Dhcpv4ConfigError::GatewayNotAHost { gateway, subnet } => write!(
                f,
                "the gateway {gateway} is the network or broadcast address of {subnet}"
            ),
            Dhcpv4ConfigError::EmptyPool => f.write_str("the address pool is empty (pool size 0)"),
            Dhcpv4ConfigError::PoolStartOutside { subnet, pool_first } => write!(
                f,
                "the pool must start inside {subnet}, above its network address (not {pool_first})"
            ),
            Dhcpv4ConfigError::PoolPastBroadcast {
                subnet,
                pool_first,
                pool_size,
                usable_last,
                largest,
            } => write!(
                f,
                "the pool of {pool_size} from {pool_first} runs past {usable_last} (the last address before {subnet}'s broadcast); the largest pool from there is {largest}"
            ),
            Dhcpv4ConfigError::PoolHoldsGateway {
                pool_first,
                pool_last,
                gateway,
            } => write!(
                f,
                "the pool {pool_first}..{pool_last} holds the gateway's own address {gateway}; start it above the gateway"
            ),
            Dhcpv4ConfigError::LeaseTooShort { seconds } => write!(
                f,
                "a lease time of {seconds} s is too short (at least 10 s)"
            ),
            Dhcpv4ConfigError::DnsOutsideLab { dns } => {
                write!(f, "the DNS server {dns} is not inside {LAB_V4_TEXT}")
            }
        }
    }
}

impl std::error::Error for Dhcpv4ConfigError {}
