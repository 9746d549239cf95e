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
//! is reproducible.//!
//! The module's parts, one job each: `config` (what is handed out, and its check),
//! `messages` (arrivals, destinations, events, counters), `leases` (the lease table) and
//! `server` (the state machine over them).

mod config;
mod leases;
mod messages;
mod server;
#[cfg(test)]
mod tests;

pub use config::{defaults, Dhcpv4Config, Dhcpv4ConfigError};
pub use messages::{
    Arrival, Destination, Dhcpv4Drop, Dhcpv4Event, Dhcpv4Reply, Dhcpv4Stats, NakReason,
};
pub use server::Dhcpv4Server;
