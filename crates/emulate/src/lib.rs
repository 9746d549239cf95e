//! # emulate
//!
//! The control planes wirerate plays on its ports, as sans-I/O state machines: each is fed
//! `(now, frame bytes)` and returns frames to send and events; time-driven work happens in
//! `poll(now)` and `next_deadline()` says when to call it next. Nothing here opens a socket,
//! spawns a thread or reads a clock. Randomness comes from the source in the configuration
//! ([`util::Entropy`]): the operating system's (getrandom(2)) by default, so nothing a peer
//! must not predict repeats between runs; a seed in tests, so a run is reproducible under a
//! simulated clock.
//!
//! - [`arp_nd`]: ARP and IPv6 Neighbor Discovery responder and resolver.
//! - [`ppp`]: the RFC 1661 automaton and one PPP link (LCP, PAP, CHAP-MD5, IPCP, IPv6CP).
//! - [`pppoe`]: the RFC 2516 access concentrator ([`pppoe::server`]) and subscriber
//!   ([`pppoe::client`]), and the per-session header for the engine's fast path.
//! - [`dslite`]: the RFC 6333 AFTR and B4, with outer IPv6 fragmentation and reassembly.
//! - [`ipfrag`]: IPv4 fragmentation and reassembly (1500-byte packets in a PPPoE session).
//! - [`router_adv`], [`dhcpv6`], [`provision`]: IPv6 provisioning of an ISP port — Router
//!   Advertisements and a stateful DHCPv6 server (IA_NA, IA_PD, DNS, AFTR-Name);
//!   [`pppoe_v6`]: the same inside every PPPoE session after IPv6CP.
//! - [`dhcpv4`], [`dns`], [`ipoe`]: the ISP side of an IPoE WAN — a DHCPv4 server with a
//!   lease table, an authoritative DNS server (UDP and TCP), and the port that puts them
//!   beside the IPv6 provisioning; [`ranges`]: the address ranges they may hand out.
//! - [`mape`]: the MAP-E Border Relay (RFC 7597): decapsulation with the source check of
//!   §8.1, encapsulation to the CE of a destination address and port, drops by reason.
//! - [`softwire`]: the AFTR and B4 on a port: ND for the tunnel endpoint, a tunnel probe,
//!   and the data-path view of a softwire ([`softwire::SoftwireInfo`]); [`aftr_lookup`]: the
//!   B4's lookup of its AFTR by name (RFC 6334) through the DNS server it was given.
//!
//! See `docs/emulate.md` for the behaviour each machine promises.

// No `unsafe` here: system calls live in the `sys` modules of `engine` and `lab`.
#![forbid(unsafe_code)]

pub mod aftr_lookup;
pub mod arp_nd;
pub mod control_plane;
pub mod dhcpv4;
pub mod dhcpv6;
pub mod dns;
pub mod dslite;
pub mod frames;
mod impls;
pub mod ipfrag;
pub mod ipoe;
pub mod mape;
pub mod mape_port;
pub mod ppp;
pub mod pppoe;
pub mod pppoe_v6;
pub mod provision;
pub mod ranges;
pub mod router_adv;
pub mod softwire;
pub mod util;

pub use wire::units::Nanos;
