//! # lab-model
//!
//! What the lab's words mean, without a lab: the shape of a lab ([`Topology`], [`Node`],
//! [`PortId`] and the fixed documentation addresses of [`topology`]), the DUT configurations
//! ([`Profile`]: names, parsing and the nftables ruleset each one installs), the kernel
//! features a profile needs ([`feature::Feature`]), which XDP fast path goes with a profile
//! ([`fastpath::program_for`]), the links' [`LINK_MTU`] and the connection table's counters
//! ([`conntrack::ConntrackStats`]).
//!
//! Why a crate of its own: plans (`bench-model`) and reports name these things, and naming them
//! must not link what builds and measures a lab (`lab`: system calls, `aya`, and with its
//! `fastpath` feature a build script that runs clang). This crate has no dependency but serde,
//! no build script and no `unsafe`; `lab` re-exports every item at its old path
//! (`lab::Profile`, `lab::topology`, `lab::fastpath::program_for`, …).
//!
//! | module | job |
//! |---|---|
//! | [`topology`] | topologies as data: namespaces, veth links, addresses, routes; lab and namespace names |
//! | [`profile`] | DUT profiles: names, parsing, the nftables ruleset each one generates |
//! | [`feature`] | the kernel capabilities a profile may need |
//! | [`fastpath`] | which fast-path program goes with a profile on a topology, or why none does |
//! | [`conntrack`] | the DUT connection table's counters at one moment, and their growth |
//! | [`error`] | a name or combination the vocabulary refuses, with what to give instead |

#![forbid(unsafe_code)]

pub mod conntrack;
pub mod error;
pub mod fastpath;
pub mod feature;
pub mod profile;
pub mod topology;

pub use error::{Error, Result};
pub use profile::{MssBackend, Profile};
pub use topology::{Node, PortId, Topology};

/// The MTU of every lab link: Ethernet's 1500, so frames of at most 1518 B with FCS, as on the
/// devices the lab stands in for (plans refuse larger frames on the lab).
pub const LINK_MTU: u32 = 1500;
