//! PPP over a PPPoE session: the RFC 1661 automaton ([`fsm`]), what each protocol's options
//! mean ([`neg`]), and one whole link — LCP, PAP/CHAP, IPCP, IPv6CP, echo — as [`link::Link`],
//! which both the access concentrator and the subscriber run per session.

pub mod fsm;
pub mod link;
pub mod neg;

pub use fsm::{FsmConfig, State};
pub use link::{Credential, DownReason, Link, LinkConfig, LinkEvent, Negotiated, Role};
pub use neg::AuthMethod;
