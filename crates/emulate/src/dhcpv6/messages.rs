//! What comes out of a [`super::Dhcpv6Server`] besides the reply bytes: what a binding holds,
//! the events and the counters.

use core::net::Ipv6Addr;

use crate::util::Counter;

/// IA_NA or IA_PD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IaKind {
    Na,
    Pd,
}

/// What a binding holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leased {
    Address(Ipv6Addr),
    Prefix(Ipv6Addr, u8),
}

/// What the server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dhcpv6Event {
    /// A binding was made (Request, or Solicit with Rapid Commit).
    Bound {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
    /// A Renew or Rebind extended it.
    Renewed {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
    /// Released or declined by the client.
    Released {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
    /// Its valid lifetime ran out.
    Expired {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
}

/// Messages not answered, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dhcpv6Drop {
    /// Shorter than the header or with broken option framing.
    Malformed,
    /// A message type a server does not take from a client (Advertise, Reply, relay, …).
    UnexpectedType,
    /// No Client Identifier where one is required.
    NoClientId,
    /// A Server Identifier in a Solicit/Confirm/Rebind, where it is forbidden.
    UnexpectedServerId,
    /// A Request/Renew/Release/Decline for another server (or without a Server Identifier).
    NotForUs,
}

/// Counters of a [`super::Dhcpv6Server`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dhcpv6Stats {
    /// Messages received by type.
    pub rx: Counter<u8>,
    /// Messages sent by type.
    pub tx: Counter<u8>,
    pub dropped: Counter<Dhcpv6Drop>,
    /// IA_NA/IA_PD answered NoAddrsAvail/NoPrefixAvail (pool empty or exhausted).
    pub no_addrs: u64,
    pub no_prefix: u64,
    pub bindings_now: u64,
    pub expired: u64,
}
