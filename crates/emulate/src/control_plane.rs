//! Lets the engine drive these machines on real ports: each implements the engine's
//! [`ControlPlane`] by forwarding to its own sans-I/O methods. The impls live here, not in the
//! engine, so that crates depend only downward (DESIGN.md §3): emulate knows the engine's
//! interface, the engine knows nothing of PPPoE or DS-Lite.

use engine::control::ControlPlane;
use wire::units::Nanos;

macro_rules! control_plane {
    ($($t:ty),*) => {$(
        impl ControlPlane for $t {
            fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
                <$t>::handle_frame(self, now, frame)
            }
            fn poll(&mut self, now: Nanos) {
                <$t>::poll(self, now)
            }
            fn next_deadline(&self) -> Option<Nanos> {
                <$t>::next_deadline(self)
            }
            fn take_transmit(&mut self) -> Vec<Vec<u8>> {
                <$t>::take_transmit(self)
            }
        }
    )*};
}

control_plane!(
    crate::pppoe::server::Server,
    crate::pppoe::client::Client,
    crate::arp_nd::Neighbors,
    crate::dslite::Aftr,
    crate::dslite::B4,
    crate::softwire::AftrPort,
    crate::softwire::B4Port
);

macro_rules! ip_relay {
    ($($t:ty),*) => {$(
        impl engine::tun::IpRelay for $t {
            fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
                <$t>::take_ip(self, out)
            }
            fn send_ip(&mut self, now: Nanos, packet: &[u8]) -> Result<(), engine::tun::RelayDrop> {
                <$t>::send_ip(self, now, packet)
            }
        }
    )*};
}

ip_relay!(
    crate::pppoe::server::Server,
    crate::pppoe::client::Client,
    crate::softwire::AftrPort,
    crate::softwire::B4Port
);
