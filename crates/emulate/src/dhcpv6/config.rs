//! What a [`super::Dhcpv6Server`] hands out and says, and the check that keeps it inside
//! the lab.

use core::net::Ipv6Addr;
use std::fmt;

use wire::dhcpv6;
use wire::ethernet::MacAddr;

use super::mape::{MapeProvision, MapeProvisionError};
use super::pools::{in_prefix, AddressPool, PrefixPool, DOCUMENTATION_V6};

/// What the server hands out and says.
#[derive(Debug, Clone)]
pub struct Dhcpv6Config {
    /// Our DUID (Server Identifier). [`Dhcpv6Config::new`] makes a DUID-LL from the MAC.
    pub server_duid: Vec<u8>,
    /// IA_NA addresses; `None` answers every IA_NA with NoAddrsAvail.
    pub addresses: Option<AddressPool>,
    /// IA_PD prefixes; `None` answers every IA_PD with NoPrefixAvail.
    pub prefixes: Option<PrefixPool>,
    /// DNS Recursive Name Servers (option 23), sent when the client asks in its ORO.
    pub dns: Vec<Ipv6Addr>,
    /// AFTR-Name (option 64), sent when the client asks in its ORO (RFC 6334 §3).
    pub aftr_name: Option<String>,
    /// The MAP-E rule and BR (OPTION_S46_CONT_MAPE, 94), sent when the client asks in its
    /// ORO (RFC 7598 §5): a MAP-E CE takes its shared IPv4 address and port set from the
    /// delegated prefix through this rule, so the rule must cover every prefix of the pool.
    pub mape: Option<MapeProvision>,
    /// Lifetimes of what is granted, seconds; T1/T2 tell the client when to Renew/Rebind.
    pub preferred: u32,
    pub valid: u32,
    pub t1: u32,
    pub t2: u32,
    /// Answer a Solicit carrying Rapid Commit with a committed Reply (RFC 8415 §18.3.1).
    pub rapid_commit: bool,
    /// Preference option in Advertise (255: the client takes this server at once).
    pub preference: u8,
}

impl Dhcpv6Config {
    pub fn new(mac: MacAddr) -> Dhcpv6Config {
        let mut duid = vec![0, 3, 0, 1];
        duid.extend(mac.0);
        Dhcpv6Config {
            server_duid: duid,
            addresses: None,
            prefixes: None,
            dns: Vec::new(),
            aftr_name: None,
            mape: None,
            preferred: 3600,
            valid: 7200,
            t1: 1800,
            t2: 2880,
            rapid_commit: true,
            preference: 255,
        }
    }

    /// Refuses what cannot work or would leave the lab's address space: pools outside
    /// 2001:db8::/32 or of size 0, a delegated length not longer than the base (or above 128),
    /// an AFTR name that is not a valid DNS name, T1 > T2 or preferred > valid.
    pub fn check(&self) -> Result<(), Dhcpv6ConfigError> {
        use Dhcpv6ConfigError as E;
        let (doc, doc_len) = DOCUMENTATION_V6;
        if let Some(p) = &self.addresses {
            let last = p.get(p.size.saturating_sub(1));
            if p.size == 0 {
                return Err(E::EmptyAddressPool);
            }
            if !in_prefix(p.first, doc, doc_len) || !in_prefix(last, doc, doc_len) {
                return Err(E::AddressPoolOutside {
                    first: p.first,
                    last,
                });
            }
        }
        if let Some(p) = &self.prefixes {
            if p.base_len < doc_len || !in_prefix(p.base, doc, doc_len) {
                return Err(E::PrefixPoolOutside {
                    base: p.base,
                    base_len: p.base_len,
                });
            }
            if p.delegated_len <= p.base_len || p.delegated_len > 128 {
                return Err(E::DelegatedLength {
                    delegated_len: p.delegated_len,
                    base_len: p.base_len,
                });
            }
            if u128::from(p.base) & !(u128::MAX << (128 - u32::from(p.base_len))) != 0 {
                return Err(E::HostBits {
                    base: p.base,
                    base_len: p.base_len,
                });
            }
            if p.capacity() == 0 {
                return Err(E::EmptyPrefixPool);
            }
        }
        if let Some(n) = &self.aftr_name {
            let mut b = [0u8; dhcpv6::MAX_NAME_LEN];
            dhcpv6::encode_name(n, &mut b).map_err(|e| E::AftrName {
                name: n.clone(),
                reason: e,
            })?;
        }
        if let Some(m) = &self.mape {
            m.check(self.prefixes.as_ref()).map_err(E::Mape)?;
        }
        if self.t1 > self.t2 || self.preferred > self.valid {
            return Err(E::Lifetimes);
        }
        Ok(())
    }
}

/// Why [`Dhcpv6Config::check`] refused a configuration; the message says what would work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dhcpv6ConfigError {
    /// An address pool of size 0.
    EmptyAddressPool,
    /// The address pool leaves 2001:db8::/32.
    AddressPoolOutside { first: Ipv6Addr, last: Ipv6Addr },
    /// The prefix pool is not inside 2001:db8::/32.
    PrefixPoolOutside { base: Ipv6Addr, base_len: u8 },
    /// The delegated length is not longer than the pool's, or above 128.
    DelegatedLength { delegated_len: u8, base_len: u8 },
    /// The prefix pool's base has bits set past its length.
    HostBits { base: Ipv6Addr, base_len: u8 },
    /// A prefix pool that delegates nothing.
    EmptyPrefixPool,
    /// The AFTR name (option 64) cannot be encoded as a DNS name.
    AftrName { name: String, reason: wire::Error },
    /// T1 > T2 or preferred > valid.
    Lifetimes,
    /// The MAP-E rule (option 94) cannot map the prefixes the pool delegates
    /// ([`MapeProvision::check`] says why).
    Mape(MapeProvisionError),
}

impl fmt::Display for Dhcpv6ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Dhcpv6ConfigError as E;
        match self {
            E::EmptyAddressPool => f.write_str("the address pool is empty"),
            E::AddressPoolOutside { first, last } => {
                write!(f, "the address pool {first}..{last} leaves 2001:db8::/32")
            }
            E::PrefixPoolOutside { base, base_len } => write!(
                f,
                "the prefix pool {base}/{base_len} is not inside 2001:db8::/32"
            ),
            E::DelegatedLength {
                delegated_len,
                base_len,
            } => write!(
                f,
                "a delegated /{delegated_len} does not fit in the pool /{base_len} (it must be longer, at most /128)"
            ),
            E::HostBits { base, base_len } => {
                write!(f, "{base}/{base_len} has bits set past its length")
            }
            E::EmptyPrefixPool => f.write_str("the prefix pool is empty"),
            E::AftrName { name, reason } => write!(f, "AFTR name {name:?}: {reason}"),
            E::Lifetimes => f.write_str("lifetimes must satisfy T1 <= T2 and preferred <= valid"),
            E::Mape(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Dhcpv6ConfigError {}
