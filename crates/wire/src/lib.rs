//! # wire
//!
//! Every header wirerate sends or must understand, in the smoltcp manner: a zero-copy view
//! `Xxx<T: AsRef<[u8]>>` over a buffer (`new_unchecked`, `new_checked`, field getters, setters
//! when `T: AsMut<[u8]>`) and an owned `XxxRepr` with `parse`, `buffer_len` and `emit`.
//! Parsers never panic on any bytes; emitters write every byte of their header.
//!
//! On top of the headers: the test-frame [`signature`], the [`encap`] stack description, the
//! [`template`] that composes a complete test frame and restamps it cheaply per frame, and the
//! [`linerate`] arithmetic of DESIGN.md §4.
//!
//! This crate does no I/O, reads no clock and does not allocate per packet.

// No `unsafe` here: system calls live in the `sys` modules of `engine` and `lab`.
#![forbid(unsafe_code)]

pub mod bytes;
pub mod checksum;
pub mod error;
pub mod units;

// Link layer.
pub mod arp;
pub mod ethernet;
pub mod mpls;
pub mod vlan;

// PPP over Ethernet (RFC 2516) and the PPP control protocols carried in it.
pub mod ppp;
pub mod pppoe;

// Network and transport layers, and the ISP's provisioning and name service on them.
pub mod dhcpv4;
pub mod dhcpv6;
pub mod dns;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod routerdisc;
pub mod tcp;
pub mod udp;

// MAP-E (RFC 7597): the address and port arithmetic, and its DHCPv6 options (RFC 7598).
pub mod map_rule;
pub mod s46;

// Test frames.
pub mod dissect;
pub mod encap;
pub mod invalid;
pub mod linerate;
pub mod pcap;
pub mod signature;
pub mod template;

pub use error::{Error, Result};
