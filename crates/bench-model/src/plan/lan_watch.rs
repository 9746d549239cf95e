//! Which gateway addresses the LAN health watch asks during a run (`[run] lan-watch`, #35
//! item 5): the gateway a tester port forwards to, wherever the plan names one.

use std::net::IpAddr;

use super::vocabulary::{Port, Topology};
use super::Plan;

/// One gateway address a port asks during every trial, from one of its own addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedGateway {
    /// The plan's name of the port.
    pub port: String,
    /// The port's own address the probes come from (`ipv4` or `ipv6`).
    pub from: IpAddr,
    /// The gateway address asked for (`gateway-v4` or `gateway-v6`).
    pub gateway: IpAddr,
}

impl Plan {
    /// The gateway addresses the watch asks: on real interfaces (`topology.kind =
    /// "interfaces"`) with `run.lan-watch` on, every port's `gateway-v4` (from its `ipv4`)
    /// and `gateway-v6` (from its `ipv6`). Not on the built-in lab: its DUT is a kernel in a
    /// namespace this run built, which does not reboot, and the lab's trials keep both CPUs.
    /// Not on a port that plays an ISP side or a subscriber (PPPoE, DS-Lite, IPoE): its
    /// control plane watches that link already (session drops, lost leases).
    pub fn lan_watched_gateways(&self) -> Vec<WatchedGateway> {
        if !self.run.lan_watch || !matches!(self.topology, Topology::Interfaces) {
            return Vec::new();
        }
        self.ports
            .iter()
            .filter(|p| p.pppoe.is_none() && p.dslite.is_none() && p.ipoe.is_none())
            .flat_map(watched_of)
            .collect()
    }
}

fn watched_of(p: &Port) -> Vec<WatchedGateway> {
    let v4 = p.ipv4.zip(p.gateway_v4).map(|(a, g)| (a.into(), g.into()));
    let v6 = p.ipv6.zip(p.gateway_v6).map(|(a, g)| (a.into(), g.into()));
    v4.into_iter()
        .chain(v6)
        .map(|(from, gateway)| WatchedGateway {
            port: p.name.clone(),
            from,
            gateway,
        })
        .collect()
}
