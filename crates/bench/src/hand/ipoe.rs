//! `wirerate ipoe server` by hand, and the loop a run's IPoE port runs in its thread
//! ([`crate::ipoe_port`]): the `emulate` IPoE port (DHCPv4, RA + DHCPv6, DNS) on an open
//! port, relaying through a TUN device when given, until the caller says stop; every lease
//! and binding change is handed to the caller as it happens.

use emulate::dhcpv4::Dhcpv4Event;
use emulate::ipoe::{IpoeConfig, IpoeEvent, IpoePort};
use emulate::provision::ProvisionEvent;
use engine::control::ControlPort;
use engine::tun::{SynSeen, Tun};

use super::dslite::Done;
use super::{step_relay, BenchError};

/// What the IPoE port saw.
#[derive(Debug)]
pub enum IpoeNews {
    /// The DHCPv4 lease table changed.
    Lease(Dhcpv4Event),
    /// A DHCPv6 binding changed.
    Provision(ProvisionEvent),
    Syn(SynSeen),
}

/// Runs the IPoE port `cfg` on `port` (relaying through `tun` when given) until `stop` says
/// so.
pub fn serve(
    mut port: ControlPort,
    cfg: IpoeConfig,
    mut tun: Option<Tun>,
    stop: &mut dyn FnMut() -> bool,
    news: &mut dyn FnMut(IpoeNews),
) -> Result<Done<IpoePort>, BenchError> {
    let mut m = IpoePort::new(cfg);
    if tun.is_some() {
        m.enable_ip_relay();
    }
    while !stop() {
        step_relay(&mut port, &mut m, tun.as_mut(), |s| news(IpoeNews::Syn(s)))?;
        for e in m.take_events() {
            news(match e {
                IpoeEvent::Lease(l) => IpoeNews::Lease(l),
                IpoeEvent::Provision(p) => IpoeNews::Provision(p),
            });
        }
    }
    Ok(Done {
        machine: m,
        port,
        tun,
    })
}
