//! A stateful DHCPv6 server (RFC 8415 §18.3) for the ISP side of a home-gateway test: it
//! gives each client an address (IA_NA) and a delegated prefix (IA_PD) from pools in the
//! documentation range, and on request the DNS servers (RFC 3646) and the AFTR's name (RFC
//! 6334), which is what a stock DS-Lite gateway needs to bring its WAN up without static
//! configuration.
//!
//! Sans-I/O at the message level: [`Dhcpv6Server::handle`] takes a client message (the UDP
//! payload) and the time, and returns the reply to send, if any. The UDP/IPv6/Ethernet framing
//! is [`crate::provision`]'s. Bindings expire `valid` seconds after they were last granted
//! ([`Dhcpv6Server::poll`]). Nothing here is random: the server DUID comes from the MAC, and
//! the lowest free address/prefix is given, so a run under a simulated clock is reproducible.
//!
//! Deliberate simplifications, each harmless for a test link with one server: no relay
//! messages, no Reconfigure, no authentication; an Advertise does not reserve what it offers
//! (the Request gets the lowest free one then); a Decline frees the address like a Release.
//!
//! The module's parts, one job each: `pools` (address and prefix pools), `config` (what is
//! handed out, and its check), `mape` (option 94's rule and its check against the pool),
//! `client_msg` (a client message as read), `messages` (what a binding holds, events,
//! counters) and `server` (the state machine and its bindings).

mod client_msg;
mod config;
mod mape;
mod messages;
mod pools;
mod server;
#[cfg(test)]
mod tests;

pub use config::{Dhcpv6Config, Dhcpv6ConfigError};
pub use mape::{MapeProvision, MapeProvisionError};
pub use messages::{Dhcpv6Drop, Dhcpv6Event, Dhcpv6Stats, IaKind, Leased};
pub use pools::{in_prefix, AddressPool, PrefixPool, DOCUMENTATION_V6};
pub use server::Dhcpv6Server;
