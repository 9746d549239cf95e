//! A DHCPv4 server (RFC 2131) for the ISP side of an IPoE home-gateway test: it gives the
//! gateway's WAN an address from a pool, the subnet mask, the default router (our own
//! address), DNS servers, and a lease it renews, and it keeps a lease table whose expiry runs
//! on the clock it is fed.
//!
//! Sans-I/O at the message level, like [`crate::dhcpv6`]: [`Dhcpv4Server::handle`] takes a
//! client message (the UDP payload to port 67), how it arrived (broadcast or unicast) and the
//! time, and returns the reply and where it must go (RFC 2131 §4.1); the UDP/IPv4/Ethernet
//! framing is the port's ([`crate::ipoe`]).
//!
//! The client states of RFC 2131 §4.3.2 as a server sees them:
//! - **SELECTING**: DISCOVER → OFFER (the address is held for `offer_hold`); REQUEST with our
//!   server identifier and the offered address → ACK; a REQUEST naming another server frees
//!   our offer silently.
//! - **INIT-REBOOT**: REQUEST without server identifier, `requested_ip` set, `ciaddr` 0: ACK
//!   when it is the client's lease, or a free pool address (the server is *authoritative*: a
//!   gateway that kept its lease over our restart keeps its address); NAK when the address is
//!   another client's, outside the pool or on another network.
//! - **RENEWING** (unicast) / **REBINDING** (broadcast): REQUEST with `ciaddr` set and neither
//!   server identifier nor requested address: the lease is extended (or granted, when free,
//!   as above); otherwise NAK.
//! - **RELEASE** frees the lease; **DECLINE** (the client found the address in use) frees it
//!   and keeps the address out of the pool for `decline_hold`; **INFORM** gets the options
//!   without an address.
//!
//! Leases are keyed by the client identifier (option 61) or, without one, by `01` + the
//! client's MAC (what such an identifier would be, RFC 2132 §9.14). A client that comes back
//! gets the address it had, if it is still free. Relay agents (`giaddr` ≠ 0) are not served.
//! Nothing here is random: the lowest free address is given, so a run under a simulated clock
//! is reproducible.

use core::net::Ipv4Addr;
use std::collections::BTreeMap;
use std::fmt;

use wire::dhcpv4::{op, Dhcpv4Packet, Dhcpv4Repr, Ipv4List, MessageType};
use wire::ethernet::MacAddr;
use wire::units::Nanos;

use crate::ranges::{lab_range_v4, Ipv4Net, LAB_V4_TEXT};
use crate::util::{add, Counter};

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

    fn pool_addr(&self, i: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.pool_first).wrapping_add(i))
    }

    /// The pool index of `a`, if it is a pool address.
    fn pool_index(&self, a: Ipv4Addr) -> Option<u32> {
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

/// How a message reached us, which decides between the RENEWING (unicast) and REBINDING
/// (broadcast) states and is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Broadcast,
    Unicast,
}

/// Where a reply goes (RFC 2131 §4.1, `giaddr` 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// To 255.255.255.255 and ff:ff:ff:ff:ff:ff (the client asked, or a NAK).
    Broadcast,
    /// To this address and MAC (`yiaddr` of an OFFER/ACK, or the client's `ciaddr`).
    Unicast(Ipv4Addr, MacAddr),
}

/// A reply to send from port 67 to port 68.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dhcpv4Reply {
    pub message: Vec<u8>,
    pub to: Destination,
    pub kind: MessageType,
}

/// A change of the lease table; `mac` is the client's, `client` its lease key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dhcpv4Event {
    /// An ACK bound `addr` for `lease` seconds (a new lease, or one after INIT-REBOOT).
    Bound {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
        lease: u32,
    },
    /// An ACK in RENEWING or REBINDING extended the lease.
    Renewed {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
        lease: u32,
    },
    Released {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
    },
    /// The client found `addr` in use on the link; it is held out of the pool.
    Declined {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
    },
    Expired {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
    },
    /// A REQUEST was refused; `requested` is what the client asked for.
    Nak {
        mac: MacAddr,
        requested: Option<Ipv4Addr>,
        why: NakReason,
    },
}

/// Why a REQUEST got a NAK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NakReason {
    /// In SELECTING, the address is not the one we offered (or the offer ran out and the
    /// address went to someone else).
    NotOffered,
    /// The address is another client's.
    InUse,
    /// Not a pool address (another network, or not ours to give).
    NotInPool,
    /// A REQUEST in no state RFC 2131 §4.3.2 describes (e.g. neither address given).
    NoAddress,
}

impl NakReason {
    fn text(self) -> &'static [u8] {
        match self {
            NakReason::NotOffered => b"address not offered to this client",
            NakReason::InUse => b"address leased to another client",
            NakReason::NotInPool => b"address not in this server's pool",
            NakReason::NoAddress => b"no address requested",
        }
    }
}

/// Messages not answered, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dhcpv4Drop {
    /// Not a DHCP message, broken options, or not Ethernet.
    Malformed,
    /// A BOOTREPLY, or a server's message type (OFFER, ACK, NAK) from a client.
    NotFromClient,
    /// No message type (plain BOOTP is not served).
    NoMessageType,
    /// Through a relay agent (`giaddr` set): not served.
    Relayed,
    /// A DHCPDECLINE/RELEASE naming another server.
    NotForUs,
    /// A DISCOVER with every pool address taken.
    PoolExhausted,
}

/// Counters of a [`Dhcpv4Server`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dhcpv4Stats {
    pub rx: Counter<MessageType>,
    pub tx: Counter<MessageType>,
    pub dropped: Counter<Dhcpv4Drop>,
    pub naks: Counter<NakReason>,
    /// REQUESTs naming another server: our offer withdrawn.
    pub other_server: u64,
    /// Messages that arrived broadcast / unicast.
    pub broadcast_rx: u64,
    pub unicast_rx: u64,
    pub leases_now: u64,
    pub expired: u64,
    pub declined: u64,
}

/// What a lease table entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Offered, held until the deadline.
    Offered,
    /// Bound (ACKed), until the deadline.
    Bound,
    /// Released or expired: the address is free, remembered so the client gets it back.
    Free,
}

#[derive(Debug, Clone, Copy)]
struct Lease {
    index: u32,
    mac: MacAddr,
    state: State,
    until: Nanos,
}

fn secs(s: u32) -> Nanos {
    Nanos(u64::from(s) * 1_000_000_000)
}

/// The lease key of a client: its identifier, or `01` + MAC.
fn client_key(r: &Dhcpv4Repr<'_>) -> Vec<u8> {
    match r.client_id {
        Some(id) => id.to_vec(),
        None => {
            let mut k = vec![1u8];
            k.extend(r.client_mac.0);
            k
        }
    }
}

/// The DHCPv4 server with its lease table.
#[derive(Debug)]
pub struct Dhcpv4Server {
    cfg: Dhcpv4Config,
    leases: BTreeMap<Vec<u8>, Lease>,
    /// Pool index → the client whose Offered/Bound lease holds it.
    taken: BTreeMap<u32, Vec<u8>>,
    /// Declined pool indices and until when they stay out.
    declined: BTreeMap<u32, Nanos>,
    routers: [u8; 4],
    dns: Vec<u8>,
    events: Vec<Dhcpv4Event>,
    pub stats: Dhcpv4Stats,
}

impl Dhcpv4Server {
    /// A server with `cfg` as it is (check it first: [`Dhcpv4Config::check`]).
    pub fn new(cfg: Dhcpv4Config) -> Dhcpv4Server {
        Dhcpv4Server {
            routers: cfg.gateway.octets(),
            dns: cfg.dns.iter().flat_map(|a| a.octets()).collect(),
            cfg,
            leases: BTreeMap::new(),
            taken: BTreeMap::new(),
            declined: BTreeMap::new(),
            events: Vec::new(),
            stats: Dhcpv4Stats::default(),
        }
    }

    pub fn config(&self) -> &Dhcpv4Config {
        &self.cfg
    }

    pub fn take_events(&mut self) -> Vec<Dhcpv4Event> {
        std::mem::take(&mut self.events)
    }

    /// The bound leases: (client MAC, address), in address order.
    pub fn bound(&self) -> impl Iterator<Item = (MacAddr, Ipv4Addr)> + '_ {
        self.taken.iter().filter_map(|(&i, k)| {
            let l = self.leases.get(k)?;
            (l.state == State::Bound).then(|| (l.mac, self.cfg.pool_addr(i)))
        })
    }

    /// The client bound to `addr`, if any.
    pub fn bound_to(&self, addr: Ipv4Addr) -> Option<MacAddr> {
        let k = self.taken.get(&self.cfg.pool_index(addr)?)?;
        let l = self.leases.get(k)?;
        (l.state == State::Bound).then_some(l.mac)
    }

    /// When the next offer, lease or decline runs out.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.leases
            .values()
            .filter(|l| l.state != State::Free)
            .map(|l| l.until)
            .chain(self.declined.values().copied())
            .min()
    }

    /// Ends offers and leases that ran out, and declines that are over.
    pub fn poll(&mut self, now: Nanos) {
        let due: Vec<Vec<u8>> = self
            .leases
            .iter()
            .filter(|(_, l)| l.state != State::Free && l.until <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in due {
            let Some(l) = self.leases.get_mut(&k) else {
                continue;
            };
            let was = l.state;
            l.state = State::Free;
            let (index, mac) = (l.index, l.mac);
            self.taken.remove(&index);
            if was == State::Bound {
                self.stats.expired += 1;
                self.events.push(Dhcpv4Event::Expired {
                    mac,
                    client: k,
                    addr: self.cfg.pool_addr(index),
                });
            }
        }
        self.declined.retain(|_, until| *until > now);
        self.count_leases();
    }

    fn count_leases(&mut self) {
        self.stats.leases_now = self
            .leases
            .values()
            .filter(|l| l.state == State::Bound)
            .count() as u64;
    }

    /// Whether pool index `i` may go to `key`: not another's, not declined.
    fn free_for(&self, i: u32, key: &[u8]) -> bool {
        !self.declined.contains_key(&i) && self.taken.get(&i).map_or(true, |k| k == key)
    }

    /// The lowest pool index free for `key` (a scan: an IPoE port serves a few gateways).
    fn lowest_free(&self, key: &[u8]) -> Option<u32> {
        (0..self.cfg.pool_size).find(|&i| self.free_for(i, key))
    }

    /// Holds index `i` for `key` in `state` until `until`.
    fn hold(&mut self, key: &[u8], mac: MacAddr, i: u32, state: State, until: Nanos) {
        if let Some(old) = self.leases.get(key) {
            if old.index != i && old.state != State::Free {
                self.taken.remove(&old.index);
            }
        }
        self.taken.insert(i, key.to_vec());
        self.leases.insert(
            key.to_vec(),
            Lease {
                index: i,
                mac,
                state,
                until,
            },
        );
    }

    /// Frees `key`'s lease (its address stays remembered for the client).
    fn free(&mut self, key: &[u8]) -> Option<Lease> {
        let l = self.leases.get_mut(key)?;
        if l.state == State::Free {
            return None;
        }
        let before = *l;
        l.state = State::Free;
        self.taken.remove(&before.index);
        Some(before)
    }

    /// Handles one client message (a UDP payload to port 67) that arrived as `arrival`; the
    /// reply to send, if any.
    pub fn handle(&mut self, now: Nanos, bytes: &[u8], arrival: Arrival) -> Option<Dhcpv4Reply> {
        self.poll(now);
        match arrival {
            Arrival::Broadcast => self.stats.broadcast_rx += 1,
            Arrival::Unicast => self.stats.unicast_rx += 1,
        }
        let parsed = Dhcpv4Packet::new_checked(bytes).and_then(|p| Dhcpv4Repr::parse(&p));
        let Ok(m) = parsed else {
            self.stats.dropped.add(Dhcpv4Drop::Malformed);
            return None;
        };
        let Some(kind) = m.message_type else {
            self.stats.dropped.add(Dhcpv4Drop::NoMessageType);
            return None;
        };
        self.stats.rx.add(kind);
        if m.op != op::REQUEST
            || matches!(
                kind,
                MessageType::Offer | MessageType::Ack | MessageType::Nak
            )
        {
            self.stats.dropped.add(Dhcpv4Drop::NotFromClient);
            return None;
        }
        if !m.giaddr.is_unspecified() {
            self.stats.dropped.add(Dhcpv4Drop::Relayed);
            return None;
        }
        let key = client_key(&m);
        let reply = match kind {
            MessageType::Discover => self.discover(now, &m, &key),
            MessageType::Request => self.request(now, &m, &key),
            MessageType::Release | MessageType::Decline => {
                self.release_or_decline(now, &m, &key, kind);
                None
            }
            MessageType::Inform => Some(self.reply(&m, MessageType::Ack, None)),
            MessageType::Offer | MessageType::Ack | MessageType::Nak => None,
        };
        self.count_leases();
        if let Some(r) = &reply {
            self.stats.tx.add(r.kind);
        }
        reply
    }

    fn discover(&mut self, now: Nanos, m: &Dhcpv4Repr<'_>, key: &[u8]) -> Option<Dhcpv4Reply> {
        // The client's current or last address, then the one it asks for, then the lowest.
        let previous = self.leases.get(key).map(|l| l.index);
        let asked = m.requested_ip.and_then(|a| self.cfg.pool_index(a));
        let pick = previous
            .filter(|&i| self.free_for(i, key))
            .or(asked.filter(|&i| self.free_for(i, key)))
            .or_else(|| self.lowest_free(key));
        let Some(i) = pick else {
            self.stats.dropped.add(Dhcpv4Drop::PoolExhausted);
            return None;
        };
        let bound = self
            .leases
            .get(key)
            .is_some_and(|l| l.state == State::Bound && l.index == i);
        if !bound {
            self.hold(
                key,
                m.client_mac,
                i,
                State::Offered,
                add(now, secs(self.cfg.offer_hold)),
            );
        }
        Some(self.reply(m, MessageType::Offer, Some(self.cfg.pool_addr(i))))
    }

    /// A REQUEST in SELECTING, INIT-REBOOT, RENEWING or REBINDING (the last two differ only
    /// in how they arrive, which the reply does not depend on).
    fn request(&mut self, now: Nanos, m: &Dhcpv4Repr<'_>, key: &[u8]) -> Option<Dhcpv4Reply> {
        let ours = self.cfg.gateway;
        let (addr, renewing) = match (m.server_id, m.requested_ip) {
            // SELECTING: our offer must be what the client requests.
            (Some(sid), _) if sid != ours => {
                self.stats.other_server += 1;
                if self
                    .leases
                    .get(key)
                    .is_some_and(|l| l.state == State::Offered)
                {
                    self.free(key);
                }
                return None;
            }
            (Some(_), Some(req)) => {
                let held = self.leases.get(key).filter(|l| l.state != State::Free);
                if held.map(|l| self.cfg.pool_addr(l.index)) != Some(req) {
                    return Some(self.nak(m, Some(req), NakReason::NotOffered));
                }
                (req, false)
            }
            (Some(_), None) => return Some(self.nak(m, None, NakReason::NoAddress)),
            // INIT-REBOOT.
            (None, Some(req)) if m.ciaddr.is_unspecified() => (req, false),
            // RENEWING (unicast) or REBINDING (broadcast).
            (None, _) if !m.ciaddr.is_unspecified() => (m.ciaddr, true),
            (None, _) => return Some(self.nak(m, m.requested_ip, NakReason::NoAddress)),
        };
        let Some(i) = self.cfg.pool_index(addr) else {
            return Some(self.nak(m, Some(addr), NakReason::NotInPool));
        };
        if !self.free_for(i, key) {
            return Some(self.nak(m, Some(addr), NakReason::InUse));
        }
        let was_bound = self
            .leases
            .get(key)
            .is_some_and(|l| l.state == State::Bound && l.index == i);
        let lease = self.cfg.lease_time;
        self.hold(key, m.client_mac, i, State::Bound, add(now, secs(lease)));
        let (mac, client) = (m.client_mac, key.to_vec());
        self.events.push(if was_bound && renewing {
            Dhcpv4Event::Renewed {
                mac,
                client,
                addr,
                lease,
            }
        } else {
            Dhcpv4Event::Bound {
                mac,
                client,
                addr,
                lease,
            }
        });
        Some(self.reply(m, MessageType::Ack, Some(addr)))
    }

    fn release_or_decline(
        &mut self,
        now: Nanos,
        m: &Dhcpv4Repr<'_>,
        key: &[u8],
        kind: MessageType,
    ) {
        if m.server_id != Some(self.cfg.gateway) {
            self.stats.dropped.add(Dhcpv4Drop::NotForUs);
            return;
        }
        let Some(l) = self.free(key) else {
            return;
        };
        let addr = self.cfg.pool_addr(l.index);
        let (mac, client) = (m.client_mac, key.to_vec());
        if kind == MessageType::Decline {
            self.stats.declined += 1;
            self.declined
                .insert(l.index, add(now, secs(self.cfg.decline_hold)));
            // A declined address is not the client's to come back to.
            self.leases.remove(key);
            self.events
                .push(Dhcpv4Event::Declined { mac, client, addr });
        } else {
            self.events
                .push(Dhcpv4Event::Released { mac, client, addr });
        }
    }

    fn nak(
        &mut self,
        m: &Dhcpv4Repr<'_>,
        requested: Option<Ipv4Addr>,
        why: NakReason,
    ) -> Dhcpv4Reply {
        self.stats.naks.add(why);
        self.events.push(Dhcpv4Event::Nak {
            mac: m.client_mac,
            requested,
            why,
        });
        let mut r = Dhcpv4Repr::new(op::REPLY, m.xid, m.client_mac);
        r.message_type = Some(MessageType::Nak);
        r.server_id = Some(self.cfg.gateway);
        r.message = Some(why.text());
        r.client_id = m.client_id;
        Dhcpv4Reply {
            message: emit(&r),
            to: Destination::Broadcast,
            kind: MessageType::Nak,
        }
    }

    /// An OFFER or ACK (`addr` None: the ACK to an INFORM, without a lease).
    fn reply(&self, m: &Dhcpv4Repr<'_>, kind: MessageType, addr: Option<Ipv4Addr>) -> Dhcpv4Reply {
        let c = &self.cfg;
        let mut r = Dhcpv4Repr::new(op::REPLY, m.xid, m.client_mac);
        r.message_type = Some(kind);
        r.broadcast = m.broadcast;
        r.ciaddr = m.ciaddr;
        r.server_id = Some(c.gateway);
        r.subnet_mask = Some(c.subnet().mask());
        r.routers = Ipv4List::new(&self.routers).ok();
        r.dns_servers = Ipv4List::new(&self.dns).ok();
        r.client_id = m.client_id;
        if let Some(a) = addr {
            r.yiaddr = a;
            r.lease_time = Some(c.lease_time);
            r.renewal_time = Some(c.lease_time / 2);
            r.rebinding_time = Some((u64::from(c.lease_time) * 7 / 8) as u32);
        }
        // RFC 2131 §4.1: to ciaddr when the client has one, broadcast when it asked,
        // else to the address being given at the client's MAC.
        let to = if !m.ciaddr.is_unspecified() {
            Destination::Unicast(m.ciaddr, m.client_mac)
        } else if m.broadcast {
            Destination::Broadcast
        } else {
            match addr {
                Some(a) => Destination::Unicast(a, m.client_mac),
                None => Destination::Broadcast,
            }
        };
        Dhcpv4Reply {
            message: emit(&r),
            to,
            kind,
        }
    }
}

fn emit(r: &Dhcpv4Repr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    // Our own replies: every value is within the format's bounds.
    let _ = r.emit(&mut Dhcpv4Packet::new_unchecked(&mut b[..]));
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: MacAddr = MacAddr([0x0e, 0x2a, 0x5f, 0x32, 0x0c, 0xaf]);
    const OTHER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0b]);
    const SERVER: Ipv4Addr = defaults::GATEWAY;

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn sec(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }

    fn server() -> Dhcpv4Server {
        let c = Dhcpv4Config::default();
        assert_eq!(c.check(), Ok(()));
        Dhcpv4Server::new(c)
    }

    /// A client message: `f` fills in what differs from a bare message of `kind`.
    fn msg(kind: MessageType, mac: MacAddr, f: impl FnOnce(&mut Dhcpv4Repr<'_>)) -> Vec<u8> {
        let mut r = Dhcpv4Repr::new(op::REQUEST, 0x1234_5678, mac);
        r.message_type = Some(kind);
        r.parameter_request_list = Some(&[1, 3, 6, 51, 58, 59]);
        f(&mut r);
        emit(&r)
    }

    fn parse(reply: &Dhcpv4Reply) -> Dhcpv4Repr<'_> {
        Dhcpv4Repr::parse(&Dhcpv4Packet::new_checked(&reply.message[..]).unwrap()).unwrap()
    }

    /// dhcpcd 9.4.1's DISCOVER, captured on a veth (the vector of `wire::dhcpv4`'s tests).
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

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The OFFER for dhcpcd's DISCOVER, written out by hand (RFC 2131 §4.3.1, Table 3):
    /// BOOTREPLY, xid 0xa480ea77, yiaddr 198.51.100.10, chaddr, cookie; 53 OFFER, 54
    /// 198.51.100.1, 51 3600, 58 1800, 59 3150, 1 255.255.255.0, 3 198.51.100.1, 6
    /// 203.0.113.53, END, padding to 300 bytes.
    fn expected_offer() -> Vec<u8> {
        let mut b = vec![0u8; 300];
        b[..4].copy_from_slice(&[2, 1, 6, 0]);
        b[4..8].copy_from_slice(&[0xa4, 0x80, 0xea, 0x77]);
        b[16..20].copy_from_slice(&[198, 51, 100, 10]);
        b[28..34].copy_from_slice(&CLIENT.0);
        b[236..240].copy_from_slice(&[99, 130, 83, 99]);
        let o: &[u8] = &[
            53, 1, 2, 54, 4, 198, 51, 100, 1, 51, 4, 0, 0, 0x0e, 0x10, 58, 4, 0, 0, 0x07, 0x08, 59,
            4, 0, 0, 0x0c, 0x4e, 1, 4, 255, 255, 255, 0, 3, 4, 198, 51, 100, 1, 6, 4, 203, 0, 113,
            53, 255,
        ];
        b[240..240 + o.len()].copy_from_slice(o);
        b
    }

    #[test]
    fn dhcpcd_discover_gets_a_byte_exact_offer_then_request_gets_the_ack() {
        let mut s = server();
        let offer = s
            .handle(sec(1), &unhex(DHCPCD_DISCOVER), Arrival::Broadcast)
            .unwrap();
        assert_eq!(offer.kind, MessageType::Offer);
        assert_eq!(offer.message, expected_offer());
        // The broadcast flag is clear: to the offered address at the client's MAC.
        assert_eq!(offer.to, Destination::Unicast(ip("198.51.100.10"), CLIENT));
        assert_eq!(s.bound().count(), 0, "an offer binds nothing");
        // SELECTING: REQUEST with our server id and the offered address.
        let req = msg(MessageType::Request, CLIENT, |r| {
            r.xid = 0xa480_ea77;
            r.server_id = Some(SERVER);
            r.requested_ip = Some(ip("198.51.100.10"));
        });
        let ack = s.handle(sec(2), &req, Arrival::Broadcast).unwrap();
        assert_eq!(ack.kind, MessageType::Ack);
        let a = parse(&ack);
        assert_eq!(
            (a.xid, a.yiaddr, a.lease_time),
            (0xa480_ea77, ip("198.51.100.10"), Some(3600))
        );
        assert_eq!(
            a.dns_servers.unwrap().iter().collect::<Vec<_>>(),
            [defaults::DNS]
        );
        assert_eq!(
            s.bound().collect::<Vec<_>>(),
            [(CLIENT, ip("198.51.100.10"))]
        );
        assert_eq!(s.bound_to(ip("198.51.100.10")), Some(CLIENT));
        let mut key = vec![1u8];
        key.extend(CLIENT.0);
        assert_eq!(
            s.take_events(),
            [Dhcpv4Event::Bound {
                mac: CLIENT,
                client: key,
                addr: ip("198.51.100.10"),
                lease: 3600
            }]
        );
        assert_eq!(s.stats.leases_now, 1);
        assert_eq!(s.stats.tx.get(MessageType::Offer), 1);
        assert_eq!(s.stats.tx.get(MessageType::Ack), 1);
    }

    fn bind(s: &mut Dhcpv4Server, now: Nanos, mac: MacAddr) -> Ipv4Addr {
        let offer = s
            .handle(
                now,
                &msg(MessageType::Discover, mac, |_| {}),
                Arrival::Broadcast,
            )
            .unwrap();
        let addr = parse(&offer).yiaddr;
        let req = msg(MessageType::Request, mac, |r| {
            r.server_id = Some(SERVER);
            r.requested_ip = Some(addr);
        });
        assert_eq!(
            s.handle(now, &req, Arrival::Broadcast).unwrap().kind,
            MessageType::Ack
        );
        s.take_events();
        addr
    }

    #[test]
    fn renewing_and_rebinding_extend_the_lease_which_expires_on_the_clock() {
        let mut s = server();
        let a = bind(&mut s, sec(0), CLIENT);
        assert_eq!(s.next_deadline(), Some(sec(3600)));
        // RENEWING at T1: unicast, ciaddr set, no server id or requested address.
        let renew = msg(MessageType::Request, CLIENT, |r| r.ciaddr = a);
        let ack = s.handle(sec(1800), &renew, Arrival::Unicast).unwrap();
        assert_eq!(ack.kind, MessageType::Ack);
        assert_eq!(ack.to, Destination::Unicast(a, CLIENT), "to ciaddr");
        assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Renewed { addr, .. }] if *addr == a));
        assert_eq!(s.next_deadline(), Some(sec(5400)));
        // REBINDING at T2 of that: the same, broadcast.
        let ack = s.handle(sec(4950), &renew, Arrival::Broadcast).unwrap();
        assert_eq!(ack.kind, MessageType::Ack);
        assert_eq!(s.stats.broadcast_rx, 3);
        s.take_events();
        let end = sec(4950 + 3600);
        s.poll(Nanos(end.0 - 1));
        assert_eq!(
            s.stats.leases_now, 1,
            "still bound a nanosecond before the end"
        );
        s.poll(end);
        assert_eq!(s.stats.leases_now, 0);
        assert!(
            matches!(&s.take_events()[..], [Dhcpv4Event::Expired { mac: CLIENT, addr, .. }] if *addr == a)
        );
        assert_eq!(s.next_deadline(), None);
        // The expired client comes back to the same address.
        assert_eq!(bind(&mut s, end, CLIENT), a);
    }

    #[test]
    fn init_reboot_is_authoritative_and_naks_what_is_not_the_clients() {
        let mut s = server();
        let a = bind(&mut s, sec(0), CLIENT);
        let reboot = |mac, addr| {
            msg(MessageType::Request, mac, move |r| {
                r.requested_ip = Some(addr)
            })
        };
        let ack = s
            .handle(sec(1), &reboot(CLIENT, a), Arrival::Broadcast)
            .unwrap();
        assert_eq!(ack.kind, MessageType::Ack);
        assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Bound { .. }]));
        // Another client asking for it: NAK, broadcast, with the reason in option 56.
        let nak = s
            .handle(sec(1), &reboot(OTHER, a), Arrival::Broadcast)
            .unwrap();
        assert_eq!(
            (nak.kind, nak.to),
            (MessageType::Nak, Destination::Broadcast)
        );
        let n = parse(&nak);
        assert_eq!(
            (n.yiaddr, n.server_id),
            (Ipv4Addr::UNSPECIFIED, Some(SERVER))
        );
        assert_eq!(n.message, Some(&b"address leased to another client"[..]));
        // An address of another network (a lease from another ISP).
        let nak = s
            .handle(sec(1), &reboot(OTHER, ip("192.0.2.77")), Arrival::Broadcast)
            .unwrap();
        assert_eq!(nak.kind, MessageType::Nak);
        // A free pool address for a client we never saw (our restart): granted.
        let ack = s
            .handle(
                sec(1),
                &reboot(OTHER, ip("198.51.100.20")),
                Arrival::Broadcast,
            )
            .unwrap();
        assert_eq!(
            (ack.kind, parse(&ack).yiaddr),
            (MessageType::Ack, ip("198.51.100.20"))
        );
        assert_eq!(s.stats.naks.get(NakReason::InUse), 1);
        assert_eq!(s.stats.naks.get(NakReason::NotInPool), 1);
        // SELECTING with the wrong address: NAK NotOffered.
        let wrong = msg(MessageType::Request, OTHER, |r| {
            r.server_id = Some(SERVER);
            r.requested_ip = Some(ip("198.51.100.99"));
        });
        assert_eq!(
            s.handle(sec(2), &wrong, Arrival::Broadcast).unwrap().kind,
            MessageType::Nak
        );
        assert_eq!(s.stats.naks.get(NakReason::NotOffered), 1);
        // RENEWING from an address that is another's.
        let renew = msg(MessageType::Request, OTHER, |r| r.ciaddr = a);
        assert_eq!(
            s.handle(sec(3), &renew, Arrival::Unicast).unwrap().kind,
            MessageType::Nak
        );
    }

    #[test]
    fn another_servers_offer_chosen_frees_ours_and_an_unrequested_offer_runs_out() {
        let mut s = server();
        let d = msg(MessageType::Discover, CLIENT, |_| {});
        assert_eq!(
            parse(&s.handle(sec(0), &d, Arrival::Broadcast).unwrap()).yiaddr,
            ip("198.51.100.10")
        );
        // Another client meanwhile gets the next address: ours is held.
        let d2 = msg(MessageType::Discover, OTHER, |_| {});
        assert_eq!(
            parse(&s.handle(sec(0), &d2, Arrival::Broadcast).unwrap()).yiaddr,
            ip("198.51.100.11")
        );
        // The first client picks another server: its offer is freed, no reply.
        let elsewhere = msg(MessageType::Request, CLIENT, |r| {
            r.server_id = Some(ip("198.51.100.254"));
            r.requested_ip = Some(ip("198.51.100.200"));
        });
        assert_eq!(s.handle(sec(1), &elsewhere, Arrival::Broadcast), None);
        assert_eq!(s.stats.other_server, 1);
        let third = MacAddr([2, 0, 0, 0, 0, 0x0c]);
        let d3 = msg(MessageType::Discover, third, |_| {});
        assert_eq!(
            parse(&s.handle(sec(1), &d3, Arrival::Broadcast).unwrap()).yiaddr,
            ip("198.51.100.10")
        );
        // The offers to OTHER and `third` run out after offer_hold (30 s) unrequested.
        assert_eq!(s.next_deadline(), Some(sec(30)));
        s.poll(sec(31));
        let fourth = MacAddr([2, 0, 0, 0, 0, 0x0d]);
        let d4 = msg(MessageType::Discover, fourth, |_| {});
        assert_eq!(
            parse(&s.handle(sec(31), &d4, Arrival::Broadcast).unwrap()).yiaddr,
            ip("198.51.100.10")
        );
        assert!(s.take_events().is_empty(), "offers are not leases");
    }

    #[test]
    fn release_frees_and_decline_holds_the_address_out() {
        let mut s = server();
        let a = bind(&mut s, sec(0), CLIENT);
        let release = msg(MessageType::Release, CLIENT, |r| {
            r.ciaddr = a;
            r.server_id = Some(SERVER);
        });
        assert_eq!(s.handle(sec(5), &release, Arrival::Unicast), None);
        assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Released { addr, .. }] if *addr == a));
        assert_eq!(s.stats.leases_now, 0);
        // Released, it goes to the next client that asks…
        assert_eq!(bind(&mut s, sec(6), OTHER), a);
        // …and the first gets the next one; it declines it (an address conflict).
        let b = bind(&mut s, sec(7), CLIENT);
        assert_eq!(b, ip("198.51.100.11"));
        let decline = msg(MessageType::Decline, CLIENT, |r| {
            r.requested_ip = Some(b);
            r.server_id = Some(SERVER);
        });
        assert_eq!(s.handle(sec(8), &decline, Arrival::Broadcast), None);
        assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Declined { addr, .. }] if *addr == b));
        // Until decline_hold (600 s) passes nobody gets .11.
        assert_eq!(bind(&mut s, sec(9), CLIENT), ip("198.51.100.12"));
        let third = MacAddr([2, 0, 0, 0, 0, 0x0c]);
        assert_eq!(bind(&mut s, sec(607), third), ip("198.51.100.13"));
        let fourth = MacAddr([2, 0, 0, 0, 0, 0x0d]);
        assert_eq!(bind(&mut s, sec(609), fourth), ip("198.51.100.11"));
        // A RELEASE naming another server is not ours.
        let foreign = msg(MessageType::Release, fourth, |r| {
            r.server_id = Some(ip("192.0.2.1"))
        });
        assert_eq!(s.handle(sec(610), &foreign, Arrival::Unicast), None);
        assert_eq!(s.stats.dropped.get(Dhcpv4Drop::NotForUs), 1);
        assert_eq!(s.stats.leases_now, 4);
    }

    #[test]
    fn client_identifier_keys_the_lease_and_broadcast_flag_and_inform() {
        let mut s = server();
        let id: &[u8] = &[0xff, 0, 0, 0, 1, 0, 1, 0x2a];
        let d = msg(MessageType::Discover, CLIENT, |r| {
            r.client_id = Some(id);
            r.broadcast = true;
        });
        let offer = s.handle(sec(0), &d, Arrival::Broadcast).unwrap();
        assert_eq!(
            offer.to,
            Destination::Broadcast,
            "the client asked for broadcast"
        );
        let o = parse(&offer);
        assert!(o.broadcast);
        assert_eq!(o.client_id, Some(id), "echoed (RFC 6842)");
        let req = msg(MessageType::Request, OTHER, |r| {
            r.client_id = Some(id);
            r.server_id = Some(SERVER);
            r.requested_ip = Some(o.yiaddr);
        });
        // Same identifier from another MAC (a moved gateway): the same lease.
        assert_eq!(
            s.handle(sec(1), &req, Arrival::Broadcast).unwrap().kind,
            MessageType::Ack
        );
        assert!(
            matches!(&s.take_events()[..], [Dhcpv4Event::Bound { client, mac: OTHER, .. }] if client == id)
        );
        let inform = msg(MessageType::Inform, OTHER, |r| {
            r.ciaddr = ip("198.51.100.10")
        });
        let ack = s.handle(sec(2), &inform, Arrival::Unicast).unwrap();
        let a = parse(&ack);
        assert_eq!(
            (a.message_type, a.yiaddr, a.lease_time),
            (Some(MessageType::Ack), Ipv4Addr::UNSPECIFIED, None)
        );
        assert_eq!(ack.to, Destination::Unicast(ip("198.51.100.10"), OTHER));
        assert!(a.routers.is_some() && a.subnet_mask.is_some());
    }

    #[test]
    fn an_exhausted_pool_drops_the_discover() {
        let mut s = Dhcpv4Server::new(Dhcpv4Config {
            pool_size: 2,
            ..Dhcpv4Config::default()
        });
        bind(&mut s, sec(0), CLIENT);
        bind(&mut s, sec(0), OTHER);
        let d = msg(MessageType::Discover, MacAddr([2, 0, 0, 0, 0, 9]), |_| {});
        assert_eq!(s.handle(sec(0), &d, Arrival::Broadcast), None);
        assert_eq!(s.stats.dropped.get(Dhcpv4Drop::PoolExhausted), 1);
    }

    #[test]
    fn what_a_server_must_not_answer_is_counted_and_nothing_panics() {
        let mut s = server();
        let relayed = msg(MessageType::Discover, CLIENT, |r| {
            r.giaddr = ip("192.0.2.1")
        });
        let reply = msg(MessageType::Discover, CLIENT, |r| r.op = op::REPLY);
        let offer = msg(MessageType::Offer, CLIENT, |_| {});
        let bootp = msg(MessageType::Discover, CLIENT, |r| r.message_type = None);
        for m in [&relayed, &reply, &offer, &bootp] {
            assert_eq!(s.handle(sec(0), m, Arrival::Broadcast), None);
        }
        assert_eq!(s.handle(sec(0), b"not dhcp", Arrival::Broadcast), None);
        assert_eq!(s.stats.dropped.get(Dhcpv4Drop::Relayed), 1);
        assert_eq!(s.stats.dropped.get(Dhcpv4Drop::NotFromClient), 2);
        assert_eq!(s.stats.dropped.get(Dhcpv4Drop::NoMessageType), 1);
        assert_eq!(s.stats.dropped.get(Dhcpv4Drop::Malformed), 1);
        let d = unhex(DHCPCD_DISCOVER);
        for n in 0..d.len() {
            let _ = s.handle(sec(0), &d[..n], Arrival::Broadcast);
        }
        assert!(
            s.stats.tx.get(MessageType::Offer) == 0,
            "only the whole message is answered"
        );
        assert!(s.handle(sec(0), &d, Arrival::Broadcast).is_some());
    }

    #[test]
    fn config_checks_name_what_is_wrong() {
        let base = Dhcpv4Config::default();
        let bad = |f: &dyn Fn(&mut Dhcpv4Config)| {
            let mut c = base.clone();
            f(&mut c);
            c.check().unwrap_err().to_string()
        };
        assert!(bad(&|c| c.pool_size = 0).contains("empty"));
        assert!(bad(&|c| c.pool_size = 300).contains("largest pool from there is 245"));
        assert!(bad(&|c| c.gateway = ip("10.0.0.1")).contains("198.18.0.0/15"));
        assert!(bad(&|c| c.pool_first = ip("198.51.100.0")).contains("above its network"));
        assert!(bad(&|c| c.pool_first = ip("198.51.100.1")).contains("gateway's own address"));
        assert!(bad(&|c| c.lease_time = 5).contains("too short"));
        let short = Dhcpv4Config {
            lease_time: 5,
            ..base.clone()
        };
        assert_eq!(
            short.check(),
            Err(Dhcpv4ConfigError::LeaseTooShort { seconds: 5 }),
            "the refusal carries the value a caller can match on"
        );
        assert!(bad(&|c| c.dns = vec![ip("8.8.8.8")]).contains("DNS server 8.8.8.8"));
        assert!(bad(&|c| c.prefix_len = 16).contains("not inside"));
        // The benchmarking range holds 100,000 subscribers behind one gateway.
        let big = Dhcpv4Config {
            gateway: ip("198.18.0.1"),
            prefix_len: 15,
            pool_first: ip("198.18.0.10"),
            pool_size: 100_000,
            ..base
        };
        assert_eq!(big.check(), Ok(()));
    }
}
