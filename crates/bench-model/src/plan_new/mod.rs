//! The plan `wirerate plan new` writes: a commented starting point for the setups our users
//! test (a router or firewall between two ports; a home gateway with wirerate as its ISP over
//! PPPoE or DS-Lite; the device as an endpoint), from what the host says about the interfaces
//! (`bench::iface` reads it; this module only writes text).
//!
//! A pure function of a [`Request`], so that every template is tested without a network: each
//! text it writes parses with [`crate::plan::Plan::parse`] unedited and expands to the cases
//! its comments promise (`tests`). What it cannot know it either guesses and marks `CHECK`
//! (a next hop no route names, the ISP side's credentials) or refuses with what to do (a port
//! without an address to send from, a link without a wire speed and no `--speed`).

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use wire::units::BitsPerSec;

use crate::port_link::{speed_text, speed_value, WireSpeed};

mod sections;
#[cfg(test)]
mod tests;

/// Which setup the plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// A router or firewall between ports `a` (test frames start here) and `b`.
    Router,
    /// A home gateway between `lan` and `wan`, where wirerate plays the ISP's PPPoE access
    /// concentrator.
    GatewayPppoe,
    /// A home gateway between `lan` and `wan`, where wirerate plays the ISP's DS-Lite AFTR.
    GatewayDslite,
    /// The device itself is the far end of the traffic, behind one `port`.
    Endpoint,
}

impl Setup {
    /// Every setup with its command-line name.
    pub const ALL: [(&'static str, Setup); 4] = [
        ("router", Setup::Router),
        ("gateway-pppoe", Setup::GatewayPppoe),
        ("gateway-dslite", Setup::GatewayDslite),
        ("endpoint", Setup::Endpoint),
    ];

    /// The command-line name (`gateway-pppoe`), also the plan's name.
    pub fn name(self) -> &'static str {
        Setup::ALL
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("", |(n, _)| n)
    }

    /// The plan's names of the ports, in the order traffic flows.
    pub fn port_names(self) -> &'static [&'static str] {
        match self {
            Setup::Router => &["a", "b"],
            Setup::GatewayPppoe | Setup::GatewayDslite => &["lan", "wan"],
            Setup::Endpoint => &["port"],
        }
    }
}

/// Where a next hop came from: how sure the plan can be of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The default route through the interface.
    DefaultRoute,
    /// Another route through the interface.
    Route,
    /// The one neighbour of that family the interface knows.
    Neighbour,
    /// Nothing named one: the first address of the interface's subnet that is not its own.
    SubnetGuess,
}

/// A next hop and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextHop<A> {
    /// The address.
    pub addr: A,
    /// How it was found.
    pub source: Source,
}

/// What the host says about one interface.
#[derive(Debug, Clone, PartialEq)]
pub struct PortFacts {
    /// Interface name.
    pub interface: String,
    /// Its network namespace, if any.
    pub namespace: Option<String>,
    /// Its first global IPv4 address with the prefix length.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// Its first global IPv6 address with the prefix length.
    pub ipv6: Option<(Ipv6Addr, u8)>,
    /// The IPv4 next hop through it.
    pub gateway_v4: Option<NextHop<Ipv4Addr>>,
    /// The IPv6 next hop through it.
    pub gateway_v6: Option<NextHop<Ipv6Addr>>,
    /// Its MTU.
    pub mtu: Option<u32>,
    /// Its wire speed.
    pub wire: WireSpeed,
}

impl PortFacts {
    /// `wrpna in wr-pn-a`.
    pub fn place(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} in {ns}", self.interface),
            None => self.interface.clone(),
        }
    }
}

/// What to write a plan for.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The setup.
    pub setup: Setup,
    /// The ports in [`Setup::port_names`] order, as the host describes them.
    pub ports: Vec<PortFacts>,
    /// `--speed`: the reference link speed of every port (required where a port has no wire
    /// speed of its own).
    pub speed: Option<BitsPerSec>,
    /// `--ssh USER@HOST`: where the DUT's hooks (and an endpoint's iperf3 server) run.
    pub ssh: Option<String>,
    /// `--quick`: one frame size per IP version, short trials, one TCP session; a check that
    /// the setup works, not figures to publish.
    pub quick: bool,
}

/// The RFC 2544 §9.1 frame sizes for Ethernet, bytes with FCS.
pub const RFC2544_SIZES: [u32; 7] = [64, 128, 256, 512, 1024, 1280, 1518];

/// The same for IPv6 test frames, whose smallest that carries the signature is 82 B
/// (`wire::encap::min_frame_size`).
pub const RFC2544_SIZES_V6: [u32; 7] = [82, 128, 256, 512, 1024, 1280, 1518];

/// A port's speed line: the value and why.
struct Speed {
    value: String,
    comment: String,
}

/// The speed each port's `speed` key gets, or why none can be given.
fn port_speed(r: &Request, name: &str, p: &PortFacts) -> Result<Speed, String> {
    match (&p.wire, r.speed) {
        (WireSpeed::Known { bps }, None) => Ok(Speed {
            value: speed_value(*bps),
            comment: format!("the link's speed ({})", speed_text(*bps)),
        }),
        (WireSpeed::Known { .. }, Some(s)) => {
            if let Some(why) = p.wire.refusal(s) {
                return Err(format!(
                    "port {name} ({}): --speed {}: {why}",
                    p.place(),
                    speed_value(s.0)
                ));
            }
            Ok(Speed {
                value: speed_value(s.0),
                comment: format!(
                    "--speed (the link runs at {})",
                    p.wire.bps().map_or_else(String::new, speed_text)
                ),
            })
        }
        (WireSpeed::Unknown { why }, Some(s)) => Ok(Speed {
            value: speed_value(s.0),
            comment: format!(
                "--speed: this port has no wire speed ({why}); the line-rate arithmetic uses this, and a figure above 100 % of it is labelled \"no wire speed on this port\""
            ),
        }),
        (WireSpeed::Unknown { why }, None) => Err(format!(
            "port {name} ({}) has no wire speed ({why}): give --speed, the link speed the line-rate arithmetic should use (e.g. --speed 1G); figures above it will be labelled \"no wire speed on this port\"",
            p.place()
        )),
    }
}

/// Why [`write`] wrote no plan: every case is the user's to fix (a `plan new` argument).
#[derive(Debug, Clone, PartialEq)]
pub enum PlanNewError {
    /// The setup needs `needed` ports (named `names`); the request gave `got`.
    PortCount {
        setup: &'static str,
        names: Vec<&'static str>,
        got: usize,
    },
    /// An endpoint plan without `--ssh`: its iperf3 server is started on the DUT over ssh.
    EndpointWithoutSsh,
    /// A port's facts do not make a plan (no wire speed and no `--speed`, an address or
    /// gateway missing); the text says which port and what to give.
    Port(String),
}

impl std::fmt::Display for PlanNewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanNewError::PortCount { setup, names, got } => write!(
                f,
                "{setup} needs {} port(s) ({}), got {got}",
                names.len(),
                names.join(", ")
            ),
            PlanNewError::EndpointWithoutSsh => f.write_str("an endpoint plan measures TCP to an iperf3 server that wirerate starts on the DUT over ssh: give --ssh USER@HOST (with a key: ssh runs with BatchMode)"),
            PlanNewError::Port(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PlanNewError {}

/// Writes the plan `r` asks for, or says what is missing.
pub fn write(r: &Request) -> Result<String, PlanNewError> {
    let names = r.setup.port_names();
    if r.ports.len() != names.len() {
        return Err(PlanNewError::PortCount {
            setup: r.setup.name(),
            names: names.to_vec(),
            got: r.ports.len(),
        });
    }
    if r.setup == Setup::Endpoint && r.ssh.is_none() {
        return Err(PlanNewError::EndpointWithoutSsh);
    }
    let mut speeds = Vec::new();
    for (name, p) in names.iter().zip(&r.ports) {
        speeds.push(port_speed(r, name, p).map_err(PlanNewError::Port)?);
    }
    let mut w = sections::Writer::new(r, speeds).map_err(PlanNewError::Port)?;
    w.header();
    w.ports();
    w.dut();
    w.run();
    w.matrix();
    Ok(w.finish())
}

/// `198.51.100.0/24`'s first address that is not `own`: a guess at the next hop when nothing
/// names one.
pub fn subnet_guess_v4(own: Ipv4Addr, prefix: u8) -> Option<Ipv4Addr> {
    if prefix >= 31 {
        return None;
    }
    let mask = u32::MAX << (32 - u32::from(prefix));
    let net = u32::from(own) & mask;
    [net + 1, net + 2]
        .into_iter()
        .map(Ipv4Addr::from)
        .find(|a| *a != own)
}

/// The same for IPv6: the subnet's `::1`, or `::2` when `::1` is ours.
pub fn subnet_guess_v6(own: Ipv6Addr, prefix: u8) -> Option<Ipv6Addr> {
    if prefix >= 127 {
        return None;
    }
    let mask = u128::MAX << (128 - u32::from(prefix));
    let net = u128::from(own) & mask;
    [net + 1, net + 2]
        .into_iter()
        .map(Ipv6Addr::from)
        .find(|a| *a != own)
}

/// Appends `line` and a newline.
fn line(o: &mut String, text: impl AsRef<str>) {
    let _ = writeln!(o, "{}", text.as_ref());
}
