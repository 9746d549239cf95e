//! How an XDP program runs on an interface. Its own module because a port's description
//! ([`crate::port::PortSpec::xdp_rx_mode`]) names it and the receiver ([`super::rx`]) uses the
//! port's description: in either of those it would make the two import each other.

use serde::Serialize;

/// How the program runs on the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum XdpMode {
    /// In the driver (veth and most NIC drivers).
    Native,
    /// Generic XDP on the skb, after the driver: slower, same counts.
    Skb,
}
