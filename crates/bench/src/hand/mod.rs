//! Hand-run control planes: `wirerate pppoe server|client` and `wirerate dslite aftr|b4` run
//! one `emulate` machine on one interface until told to stop, and hand back the machine with
//! its statistics. The same machines a run's ports play ([`crate::isp`]) and `trial --inside`
//! brings up ([`crate::inside`]); here a person drives them, so every event is handed to the
//! caller as it happens (the CLI prints it) and the caller decides when to stop (a duration,
//! Ctrl-C, Enter).
//!
//! - [`pppoe`]: the access concentrator (with its IPv6 provisioning) and the subscriber.
//! - [`dslite`]: the AFTR (with its link provisioning) and the B4.
//! - [`mape`]: the MAP-E BR (with its link provisioning); the CE is [`dslite`]'s B4.
//! - [`ipoe`]: the ISP side of an IPoE WAN (DHCPv4, RA + DHCPv6, DNS).
//!
//! Either may hand its sessions' IP packets to a TUN device ("the Internet" on the ISP side, a
//! `ppp0`-like WAN device on the subscriber side); the SYNs crossing it are handed over too.

pub mod dslite;
pub mod ipoe;
pub mod mape;
pub mod pppoe;

use std::time::Duration;

use engine::control::{ControlPlane, ControlPort};
use engine::port::PortSpec;
use engine::tun::{IpRelay, SynSeen, Tun};
use wire::ethernet::MacAddr;

/// Why a session machine could not run: the user's input (exit status 2 in the CLI, the
/// message names the flag) or a failure while running (a socket, the kernel; exit 1).
pub use crate::error::BenchError;

pub(crate) fn failed(e: impl ToString) -> BenchError {
    BenchError::Failed(e.to_string())
}

/// The longest one turn of a hand-run loop waits for frames: how quickly it notices a stop.
const TURN: Duration = Duration::from_millis(50);

/// Opens the control socket on `dev` (in `netns`) for a hand-run machine and reads its MAC.
pub fn open_port(
    name: &str,
    dev: &str,
    netns: Option<&str>,
) -> Result<(ControlPort, MacAddr), BenchError> {
    let mut spec = PortSpec::new(name, dev);
    spec.netns = netns.map(str::to_string);
    let port = ControlPort::open(&spec).map_err(failed)?;
    let mac = MacAddr(port.mac().map_err(failed)?);
    Ok((port, mac))
}

/// Creates the TUN device `name` in `netns` for `--tun` (a usage error for a name the kernel
/// cannot take).
pub fn create_tun(name: &str, netns: Option<&str>) -> Result<Tun, BenchError> {
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\0']) {
        return Err(BenchError::Usage(format!(
            "--tun {name:?}: an interface name of 1 to 15 characters"
        )));
    }
    Tun::create(name, netns).map_err(failed)
}

/// Gives the `--tun` device its MTU, addresses and routes.
pub fn configure_tun(
    netns: Option<&str>,
    name: &str,
    setup: &lab::tun::TunSetup,
) -> Result<(), BenchError> {
    lab::tun::configure(netns, name, setup)
        .map_err(|e| failed(format!("configuring --tun {name}: {e}")))
}

/// Creates the ISP side's TUN device ("the Internet"): `addr`/32 on it, routes to `routes`
/// (where the subscribers are), `mtu`.
pub fn internet_tun(
    name: &str,
    netns: Option<&str>,
    mtu: u32,
    addr: std::net::Ipv4Addr,
    routes: Vec<String>,
) -> Result<Tun, BenchError> {
    let t = create_tun(name, netns)?;
    let setup = lab::tun::TunSetup {
        mtu,
        addrs: vec![vec![format!("{addr}/32")]],
        routes,
    };
    configure_tun(netns, name, &setup)?;
    Ok(t)
}

/// Gives a subscriber's TUN device its session like pppd's ppp0: the `local` address with the
/// ISP's `peer` as peer, `mtu`, and the default route.
pub fn configure_wan_tun(
    netns: Option<&str>,
    t: &Tun,
    mtu: u32,
    local: std::net::Ipv4Addr,
    peer: std::net::Ipv4Addr,
) -> Result<(), BenchError> {
    let setup = lab::tun::TunSetup {
        mtu,
        addrs: vec![vec![local.to_string(), "peer".into(), peer.to_string()]],
        routes: vec!["default".into()],
    };
    configure_tun(netns, t.name(), &setup)
}

/// One turn of a hand-run machine's loop on its port.
pub(crate) fn step<C: ControlPlane>(port: &mut ControlPort, m: &mut C) -> Result<(), BenchError> {
    port.step(m, TURN).map_err(failed)
}

/// One turn of the loop, through the TUN hand-off when there is one; the SYNs it saw go to
/// `syn`.
pub(crate) fn step_relay<C: IpRelay>(
    port: &mut ControlPort,
    m: &mut C,
    tun: Option<&mut Tun>,
    mut syn: impl FnMut(SynSeen),
) -> Result<(), BenchError> {
    match tun {
        Some(t) => {
            port.step_relay(m, t, TURN).map_err(failed)?;
            for s in t.take_syns() {
                syn(s);
            }
            Ok(())
        }
        None => step(port, m),
    }
}
