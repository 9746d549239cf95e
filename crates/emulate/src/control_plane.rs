//! The interface a port runner drives a control plane through (the impls for the machines
//! are listed in `impls.rs`, so that this module and the machines do not import each other).
//!
//! [`ControlPlane`] is what a socket loop (the engine's `control::ControlPort`) needs from a
//! sans-I/O machine; [`IpRelay`] is what a TUN hand-off (`engine::tun`) needs from a machine
//! that terminates IP. The traits live here, beside the machines and with no I/O of their
//! own, so that this crate depends on `wire` alone and builds without the engine's BPF
//! toolchain (issue 18): the engine depends on these traits, not the other way round, and
//! still knows nothing of PPPoE or DS-Lite.

use wire::units::Nanos;

/// What a port needs from a control-plane state machine (see `docs/emulate.md`).
pub trait ControlPlane {
    /// Feeds one received Ethernet frame; `false` when it is not this machine's protocol.
    fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool;
    /// Runs the timers that are due.
    fn poll(&mut self, now: Nanos);
    /// When [`poll`](Self::poll) should run next.
    fn next_deadline(&self) -> Option<Nanos>;
    /// Frames to send, in order.
    fn take_transmit(&mut self) -> Vec<Vec<u8>>;
}

/// Why a packet from the TUN was not encapsulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RelayDrop {
    /// Not an IPv4 or IPv6 packet, or truncated.
    Malformed,
    /// No session or softwire owns the destination address.
    NoRoute,
    /// Larger than the session or softwire carries (its MRU / tunnel MTU).
    TooBig,
    /// The session or softwire is not up (yet, or any more).
    NotUp,
}

/// What a control plane that terminates IP must offer a TUN hand-off (implemented for the
/// PPPoE server and client, the AFTR and the B4: `impls.rs`).
pub trait IpRelay: ControlPlane {
    /// Moves the IP packets decapsulated since the last call (no link header) into `out`.
    fn take_ip(&mut self, out: &mut Vec<Vec<u8>>);
    /// Encapsulates one IP packet from the kernel towards the session or softwire its
    /// destination address belongs to.
    fn send_ip(&mut self, now: Nanos, packet: &[u8]) -> Result<(), RelayDrop>;
}

/// Implements [`ControlPlane`] for machines whose inherent methods have its names
/// (`crate::impls` lists them).
macro_rules! control_plane {
    ($($t:ty),*) => {$(
        impl $crate::control_plane::ControlPlane for $t {
            fn handle_frame(&mut self, now: wire::units::Nanos, frame: &[u8]) -> bool {
                <$t>::handle_frame(self, now, frame)
            }
            fn poll(&mut self, now: wire::units::Nanos) {
                <$t>::poll(self, now)
            }
            fn next_deadline(&self) -> Option<wire::units::Nanos> {
                <$t>::next_deadline(self)
            }
            fn take_transmit(&mut self) -> Vec<Vec<u8>> {
                <$t>::take_transmit(self)
            }
        }
    )*};
}

/// Implements [`IpRelay`] likewise.
macro_rules! ip_relay {
    ($($t:ty),*) => {$(
        impl $crate::control_plane::IpRelay for $t {
            fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
                <$t>::take_ip(self, out)
            }
            fn send_ip(
                &mut self,
                now: wire::units::Nanos,
                packet: &[u8],
            ) -> Result<(), $crate::control_plane::RelayDrop> {
                <$t>::send_ip(self, now, packet)
            }
        }
    )*};
}

pub(crate) use {control_plane, ip_relay};
