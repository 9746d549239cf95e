//! `wirerate mape br` by hand: the MAP-E BR (with its link provisioning when configured) on an
//! open port, until the caller says stop; then the machine is handed back for its statistics.
//! The CE side (`wirerate mape ce`) is [`super::dslite::run_b4`] given the CE's MAP address
//! and shared IPv4 address: on the wire a MAP-E CE's tunnel is a B4's, to the BR.

use emulate::mape_port::{BrEvent, BrPort, BrPortConfig};
use emulate::provision::ProvisionEvent;
use emulate::softwire::SoftwireInfo;
use engine::control::ControlPort;
use engine::tun::{SynSeen, Tun};
use wire::map_rule::CeMapping;

use super::dslite::Done;
use super::{step_relay, BenchError};

/// What the BR saw.
#[derive(Debug)]
pub enum BrNews {
    /// The first packet from a CE passed the checks.
    Ce {
        ce: std::net::Ipv6Addr,
        mapping: CeMapping,
        info: SoftwireInfo,
    },
    Provision(ProvisionEvent),
    Syn(SynSeen),
}

/// Runs the BR `cfg` on `port` (relaying through `tun` when given) until `stop` says so.
pub fn serve_br(
    mut port: ControlPort,
    cfg: BrPortConfig,
    mut tun: Option<Tun>,
    stop: &mut dyn FnMut() -> bool,
    news: &mut dyn FnMut(BrNews),
) -> Result<Done<BrPort>, BenchError> {
    let mut m = BrPort::new(cfg);
    if tun.is_some() {
        m.enable_ip_relay();
    }
    while !stop() {
        step_relay(&mut port, &mut m, tun.as_mut(), |s| news(BrNews::Syn(s)))?;
        for e in m.take_events() {
            match e {
                BrEvent::CeUp { ce, mapping, info } => news(BrNews::Ce { ce, mapping, info }),
                BrEvent::Provision(p) => news(BrNews::Provision(p)),
                BrEvent::Packet { .. } => {}
            }
        }
    }
    Ok(Done {
        machine: m,
        port,
        tun,
    })
}
